/**
 * Response headers that keep a downloaded file from running as the store's own origin
 * (docs/API.md, "Downloads"). A local-only file is stored with the `content_type` its uploader
 * declared, and a hub's files with what devices sent, so an uploaded HTML or SVG page, opened from
 * its URL, would otherwise run its script with the store's origin (and read events, or the
 * operator's key from localStorage).
 */
import { parse } from 'content-type';

/** Types shown inline besides image/*, video/* and audio/*: none of them runs script. */
const PASSIVE_TYPES = new Set(['text/plain', 'text/csv', 'application/json', 'application/octet-stream']);
/** What a stored type that does not parse as one type is served as (a store written before the check). */
const OPAQUE = 'application/octet-stream';
/** C0 and C1 controls, DEL: never written into a header. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** RFC 9110, 5.6.2 `token`. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** RFC 9110, 8.3.1 `type "/" subtype`, both tokens. */
const ESSENCE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The `Content-Type` a stored `contentType` is served with: its essence (type/subtype, lower case)
 * and its `charset` when that is a token, when it parses as exactly one MIME type (the
 * `content-type` package, RFC 9110, 8.3.1) with no control character; else
 * `application/octet-stream`. Nothing else of the stored value reaches the header.
 */
export function servedContentType(contentType: string): string {
  if (CONTROL.test(contentType)) return OPAQUE;
  try {
    const parsed = parse(contentType);
    if (!ESSENCE.test(parsed.type) || contentType.slice(parsed.index).trim() !== '') return OPAQUE;
    const charset = parsed.parameters.charset;
    return charset !== undefined && TOKEN.test(charset) ? `${parsed.type}; charset=${charset}` : parsed.type;
  } catch {
    return OPAQUE;
  }
}

/**
 * True when a browser may show `essence` inline without running anything it holds: images
 * (except SVG and other XML images), video, audio, plain text, CSV, JSON and raw bytes.
 * Anything else (HTML, XHTML, SVG, XML, JavaScript, PDF, unknown types) is active.
 * @param essence a type/subtype in lower case, without parameters
 */
export function isPassiveEssence(essence: string): boolean {
  if (essence.endsWith('+xml') || essence.endsWith('/xml')) return false;
  const [type] = essence.split('/', 1);
  return type === 'image' || type === 'video' || type === 'audio' || PASSIVE_TYPES.has(essence);
}

/**
 * The type and safety headers of a stored file's download: `Content-Type` (`servedContentType`),
 * `X-Content-Type-Options: nosniff` (no type guessed from the bytes) and
 * `Content-Security-Policy: sandbox` on every file (a browser that renders it anyway gives it an
 * opaque origin with scripts off: MDN, "CSP: sandbox"), and for a type that is not passive
 * `Content-Disposition: attachment` (RFC 6266), so opening its URL saves it.
 * @returns header name/value pairs, in the order to write them
 */
export function downloadHeaders(contentType: string): [string, string][] {
  const served = servedContentType(contentType);
  const headers: [string, string][] = [
    ['Content-Type', served],
    ['X-Content-Type-Options', 'nosniff'],
    ['Content-Security-Policy', 'sandbox'],
  ];
  if (!isPassiveEssence(served.split(';', 1)[0])) headers.push(['Content-Disposition', 'attachment']);
  return headers;
}
