/**
 * Keeps secrets out of every message, log line and proxied answer: the hosted search API's key,
 * and every key the logger is given (src/logger.ts). The hosted key travels
 * as the `api_key` query parameter, so `api_key=...` values are masked whatever they hold, and so
 * is every way the key itself may come back written: raw; percent-encoded by any rule
 * (`encodeURIComponent`, `encodeURI`, `URLSearchParams` with `+` for a space, every byte
 * encoded, hex digits in either case); JSON-escaped (`\"`, `\\`, `\/`, `\uXXXX`); as HTML
 * character references; as its UTF-8 bytes read as Latin-1 (how a header value or a byte
 * stream shows them); and whole in base64 or base64url. A hosted answer that echoes the request
 * URL, the body or a header in any of these forms is masked all the same.
 */

/** What a redacted secret is replaced with. */
export const REDACTED = '***';

const API_KEY_PARAM = /(api_key=)[^&\s"'<>]*/gi;

const REGEX_SPECIAL = /[\\^$.*+?()[\]{}|/-]/g;
const escapeRegex = (text: string): string => text.replace(REGEX_SPECIAL, '\\$&');

/** One hex digit of `value` (0..15), matching either case. */
function hexDigit(value: number): string {
  const upper = value.toString(16).toUpperCase();
  return value < 10 ? upper : `[${upper}${upper.toLowerCase()}]`;
}

/** `digits` hex digits of `value`, either case. */
function hex(value: number, digits: number): string {
  let out = '';
  for (let shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += hexDigit((value >> shift) & 15);
  return out;
}

const JSON_SHORT_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '/': '\\/', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
const HTML_NAMED: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** The alternatives of one character of the key as a regex fragment, and the longest (chars). */
function characterForms(ch: string): { source: string; maxLength: number } {
  const codePoint = ch.codePointAt(0)!;
  const utf8 = [...Buffer.from(ch, 'utf8')];
  const units = ch.length === 1 ? [ch.charCodeAt(0)] : [ch.charCodeAt(0), ch.charCodeAt(1)];
  const literals = new Set<string>([ch, Buffer.from(utf8).toString('latin1')]);
  if (ch === ' ') literals.add('+');
  if (JSON_SHORT_ESCAPES[ch]) literals.add(JSON_SHORT_ESCAPES[ch]);
  if (HTML_NAMED[ch]) literals.add(HTML_NAMED[ch]);
  literals.add(`&#${codePoint};`);
  const alternatives = [...literals].map(escapeRegex);
  alternatives.push(utf8.map((byte) => `%${hex(byte, 2)}`).join(''));
  alternatives.push(units.map((unit) => `\\\\u${hex(unit, 4)}`).join(''));
  alternatives.push(`&#[xX]${hex(codePoint, codePoint.toString(16).length)};`);
  const maxLength = Math.max(...[...literals].map((literal) => literal.length), utf8.length * 3, units.length * 6, codePoint.toString(16).length + 4);
  return { source: `(?:${alternatives.join('|')})`, maxLength };
}

/** A key's pattern: its regex source and the longest text it can match (chars). */
export interface SecretPattern {
  source: string;
  maxLength: number;
}

/**
 * The regex source matching `secret` in every form listed in this module's header.
 * Characters are matched one by one, so forms may even mix (part raw, part encoded).
 * @param secret a non-empty key
 */
export function secretPattern(secret: string): SecretPattern {
  const forms = [...secret].map(characterForms);
  const bytes = Buffer.from(secret, 'utf8');
  const base64 = bytes.toString('base64');
  const whole = [base64, base64.replace(/=+$/, ''), bytes.toString('base64url')].filter((form, i, all) => form !== '' && all.indexOf(form) === i);
  return {
    source: [forms.map((form) => form.source).join(''), ...whole.map(escapeRegex)].join('|'),
    maxLength: Math.max(forms.reduce((sum, form) => sum + form.maxLength, 0), base64.length),
  };
}

/**
 * One global regex matching every form of every one of `secrets` (empty ones ignored), with
 * the longest text it can match; undefined when no secret is left.
 */
export function secretsRegex(secrets: readonly (string | undefined)[]): { regex: RegExp; maxLength: number } | undefined {
  const patterns = [...new Set(secrets.filter((secret): secret is string => !!secret))].map(secretPattern);
  if (patterns.length === 0) return undefined;
  return {
    regex: new RegExp(patterns.map((pattern) => `(?:${pattern.source})`).join('|'), 'g'),
    maxLength: Math.max(...patterns.map((pattern) => pattern.maxLength)),
  };
}

const compiled = new Map<string, RegExp | undefined>();

/**
 * Returns `text` with every `api_key=...` value and every form of `secret` replaced by `***`.
 * @param secret the API key in use; when empty or absent only `api_key=` values are masked
 */
export function redact(text: string, secret: string | undefined): string {
  let result = text.replace(API_KEY_PARAM, `$1${REDACTED}`);
  if (secret) {
    if (!compiled.has(secret)) {
      if (compiled.size > 16) compiled.clear();
      compiled.set(secret, secretsRegex([secret])?.regex);
    }
    const regex = compiled.get(secret);
    if (regex) result = result.replace(regex, REDACTED);
  }
  return result;
}
