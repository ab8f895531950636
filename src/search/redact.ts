/**
 * Keeps the hosted API key out of every message and log line (issue 5 part 2: `api_key` is never
 * logged or echoed). The key travels as the `api_key` query parameter (spec part A,
 * "Authentication"), so both that parameter and the bare key are masked.
 */

/** What a redacted secret is replaced with. */
export const REDACTED = '***';

const API_KEY_PARAM = /(api_key=)[^&\s"'<>]*/gi;

/**
 * Returns `text` with every `api_key=...` value and every occurrence of `secret` (raw or
 * URL-encoded) replaced by `***`.
 * @param secret the API key in use; when empty or absent only `api_key=` values are masked
 */
export function redact(text: string, secret: string | undefined): string {
  let result = text.replace(API_KEY_PARAM, `$1${REDACTED}`);
  if (secret) {
    for (const form of new Set([secret, encodeURIComponent(secret)])) {
      result = result.split(form).join(REDACTED);
    }
  }
  return result;
}
