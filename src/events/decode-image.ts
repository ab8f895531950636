/**
 * Decoding of `base64Image` / `inputBase64Image` (docs/API.md, "Create an event", `image_decode_failed`).
 * Node's base64 decoder skips characters outside the alphabet silently, so a payload is accepted
 * only when its decoded length is exactly what its text length, white space removed, promises.
 * White space is allowed anywhere (encoders wrap at 76 columns: `base64`, `openssl base64`,
 * Python's `base64.encodebytes`); a `data:<type>;base64,` prefix is allowed.
 */
import { fileTypeFromBuffer } from 'file-type';
import { AppError } from '../errors.js';
import type { DecodedImage } from '../store/prepared-create.js';

const DATA_URI = /^data:[\w.+-]+\/[\w.+-]+;base64,/;
const WHITE_SPACE = /\s/;
const WHITE_SPACES = /\s+/g;

/**
 * Decodes one base64 image and sniffs its content type from the bytes.
 * @param field where the payload came from, for the error (e.g. `images[0].base64Image`)
 * @throws AppError image_decode_failed (400) when the text is not valid, non-empty base64
 */
export async function decodeImage(text: string, field: string): Promise<DecodedImage> {
  const unprefixed = text.replace(DATA_URI, '');
  const payload = WHITE_SPACE.test(unprefixed) ? unprefixed.replace(WHITE_SPACES, '') : unprefixed;
  const bytes = Buffer.from(payload, 'base64');
  let padding = 0;
  while (padding < 2 && payload.charCodeAt(payload.length - 1 - padding) === 61 /* = */) padding++;
  const expected = Math.floor(((payload.length - padding) * 3) / 4);
  if (bytes.length === 0 || bytes.length !== expected || payload.length % 4 === 1) {
    throw new AppError('image_decode_failed', `${field} is not valid base64`);
  }
  const type = await fileTypeFromBuffer(bytes);
  return { bytes, contentType: type?.mime ?? 'application/octet-stream' };
}
