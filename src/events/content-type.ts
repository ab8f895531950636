/**
 * The one check of a content type a producer or a fleet message chooses (docs/API.md, "Drafts
 * and attachments", rule 4): a stored content type is exactly one MIME type whose parameter
 * values are tokens, as the `content-type` package parses it (RFC 9110, 8.3.1), with no control
 * character anywhere. Quoted values are refused: a quote or a backslash inside one is read
 * differently by different parsers, and a browser that reads `image/png; a="x\"; b=", text/html`
 * as a list takes its last type. Whatever is stored can then be written into a `Content-Type`
 * header as is and read back as the same single type.
 */
import { format, parse, type ContentType } from 'content-type';
import { validationError } from '../errors.js';

const MAX_LENGTH = 256;
/** C0 controls, DEL and C1 controls (a CR/LF would split a response's headers). */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** RFC 9110, 5.6.2 `token`. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The content type `value` stored as: its type lower-cased and its parameters as the parser read
 * them, written back by the same package (`text/csv; charset=utf-8`).
 * @param field where the value came from, for the error (e.g. `['body', 'content_type']`)
 * @throws AppError validation_failed (422) when `value` is longer than 256 characters, holds a
 *   control character, is not exactly one MIME type, or has a parameter value that is not a token
 */
export function checkedContentType(value: string, field: (string | number)[]): string {
  const refuse = (why: string) => validationError(field, `content_type must be one MIME type such as text/csv; ${why}`);
  if (value.length > MAX_LENGTH) throw refuse(`this one is longer than ${MAX_LENGTH} characters`);
  if (CONTROL.test(value)) throw refuse('this one holds a control character');
  let parsed: ContentType;
  let written: string;
  try {
    parsed = parse(value);
    written = format(parsed); // checks the type and each parameter name against RFC 9110's grammar
  } catch (err) {
    throw refuse(`this one does not parse (${(err as Error).message})`);
  }
  if (value.slice(parsed.index).trim() !== '') throw refuse(`this one goes on after the type at character ${parsed.index + 1}`);
  for (const [name, parameter] of Object.entries(parsed.parameters)) {
    if (!TOKEN.test(parameter)) throw refuse(`parameter ${name}'s value must be a token, without quotes`);
  }
  return written;
}
