/**
 * A request body's JSON text parsed, with the 422 the API gives malformed JSON (docs/API.md,
 * "Errors", E6).
 */
import { validationError } from './errors.js';

/**
 * Parses a body's UTF-8 JSON text.
 * @returns the value; undefined for an empty body
 * @throws AppError validation_failed (422, `value_error.jsondecode`, at `["body"]`) on malformed
 *   JSON, with JSON.parse's error as cause
 */
export function parseJsonText(text: Buffer): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text.toString('utf8'));
  } catch (err) {
    throw validationError(['body'], `Malformed JSON: ${(err as Error).message}`, 'value_error.jsondecode', err);
  }
}
