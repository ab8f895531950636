/**
 * Response headers that keep a downloaded file from running as the store's own origin. A
 * local-only file is stored with whatever `content_type` its uploader declared, so an uploaded
 * HTML or SVG page, opened from its URL, would otherwise run its script with the device's
 * origin (and, with `API_KEY` unset, reach every route).
 */

/** Types shown inline besides image/*, video/* and audio/*: none of them runs script. */
const PASSIVE_TYPES = new Set(['text/plain', 'text/csv', 'application/json', 'application/octet-stream']);

/**
 * True when a browser may show `contentType` inline without running anything it holds: images
 * (except SVG and other XML images), video, audio, plain text, CSV, JSON and raw bytes.
 * Anything else (HTML, XHTML, SVG, XML, JavaScript, PDF, unknown types) is active.
 * @param contentType a MIME type, parameters allowed (`text/html; charset=utf-8`), any case
 */
export function isPassiveContentType(contentType: string): boolean {
  const essence = contentType.split(';', 1)[0].trim().toLowerCase();
  if (essence.endsWith('+xml') || essence.endsWith('/xml')) return false;
  const [type] = essence.split('/', 1);
  return type === 'image' || type === 'video' || type === 'audio' || PASSIVE_TYPES.has(essence);
}

/**
 * The headers every download carries: `X-Content-Type-Options: nosniff` (the browser never
 * guesses a type from the bytes), and for a type that is not passive `Content-Disposition:
 * attachment` with `Content-Security-Policy: sandbox`, so opening its URL saves it instead of
 * rendering it, and a browser that renders it anyway gives it an opaque origin with scripts off
 * (MDN, "CSP: sandbox"; RFC 6266 for Content-Disposition).
 * @returns header name/value pairs, in the order to write them
 */
export function downloadSafetyHeaders(contentType: string): [string, string][] {
  const headers: [string, string][] = [['X-Content-Type-Options', 'nosniff']];
  if (!isPassiveContentType(contentType)) {
    headers.push(['Content-Disposition', 'attachment'], ['Content-Security-Policy', 'sandbox']);
  }
  return headers;
}
