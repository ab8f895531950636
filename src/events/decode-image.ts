/**
 * Decoding of `base64Image` / `inputBase64Image` (docs/API.md, "Create an event", `image_decode_failed`).
 * Node's base64 decoder skips characters outside the alphabet silently, so a payload is accepted
 * only when its decoded length is exactly what its text length, white space removed, promises.
 * White space is allowed anywhere (encoders wrap at 76 columns: `base64`, `openssl base64`,
 * Python's `base64.encodebytes`); a `data:<type>;base64,` prefix is allowed.
 */
import { AppError, type ValidationIssue } from '../errors.js';
import type { DecodedImage } from '../store/index.js';
import { COMMON_IMAGE_TYPES, sniffFormat, type SniffedFormat } from './image-format.js';

const DATA_URI = /^data:[\w.+-]+\/[\w.+-]+;base64,/;
const WHITE_SPACE = /\s/;
const WHITE_SPACES = /\s+/g;

/**
 * Decodes one base64 image and tells its type from the bytes (image-format.ts).
 * @param field where the payload came from, for the error (e.g. `images[0].base64Image`)
 * @returns the bytes with their media type (`application/octet-stream` when unknown), and what
 *   they are, for the create to hold to docs/API.md, "Image types"
 * @throws AppError image_decode_failed (400) when the text is not valid, non-empty base64
 */
export async function decodeImage(text: string, field: string): Promise<{ image: DecodedImage; format: SniffedFormat }> {
  const unprefixed = text.replace(DATA_URI, '');
  // Most payloads have no white space: decoded as they are, their bytes are all their text promises.
  // Only a payload that comes out short is searched for white space (a regular expression over an
  // image's 44 KB of base64 took 35 µs: native-bench/PROFILE.md, "Image events: the body's pass and
  // the base64's white space").
  let payload = unprefixed;
  let bytes = Buffer.from(payload, 'base64');
  if (!decodedWhole(payload, bytes) && WHITE_SPACE.test(payload)) {
    payload = payload.replace(WHITE_SPACES, '');
    bytes = Buffer.from(payload, 'base64');
  }
  if (!decodedWhole(payload, bytes)) throw new AppError('image_decode_failed', `${field} is not valid base64`);
  const format = await sniffFormat(bytes);
  return { image: { bytes, contentType: format.mime }, format };
}

/**
 * Whether `bytes`, what Node's decoder made of `payload`, are every byte its length promises: Node
 * skips characters outside the alphabet silently, and one skipped character or more shortens the
 * bytes, except one in a payload of 4n + 1 characters before its padding, which no valid payload
 * has (so it is refused too).
 */
function decodedWhole(payload: string, bytes: Buffer): boolean {
  let padding = 0;
  while (padding < 2 && payload.charCodeAt(payload.length - 1 - padding) === 61 /* = */) padding++;
  const characters = payload.length - padding;
  return bytes.length > 0 && bytes.length === Math.floor((characters * 3) / 4) && characters % 4 !== 1;
}

/**
 * An image payload whose bytes are no image (docs/API.md, "Image types") as a FastAPI-shaped
 * issue: a 422's under NON_IMAGE_PAYLOADS=reject, or a 201's `warnings` entry under `warn`.
 * @param loc the payload's place in the body (`['body', 'images', 0, 'base64Image']`)
 */
export function nonImageIssue(loc: (string | number)[], format: SniffedFormat, policy: 'warn' | 'reject'): ValidationIssue {
  const msg = policy === 'reject'
    ? `not an image: the bytes are ${format.description}; ${COMMON_IMAGE_TYPES} and the other image types of docs/API.md, "Image types", are accepted`
    : `not an image: the bytes are ${format.description}; stored as ${format.mime} (NON_IMAGE_PAYLOADS=warn)`;
  return { loc, msg, type: 'value_error.not_an_image' };
}
