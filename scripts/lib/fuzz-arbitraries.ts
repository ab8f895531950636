/**
 * fast-check generators of hostile input for the store: create bodies (valid ones mutated, any
 * JSON, broken text, deep nesting), query strings, `metadata_filter`s, Range headers, multipart
 * bodies (wrong boundaries, truncated, huge part headers, many parts) and path ids.
 */
import fc from 'fast-check';
import { fixture } from './fixtures.js';

/**
 * Percent-encodes the UTF-8 bytes of `text` like encodeURIComponent, but never throws: a lone
 * surrogate (which encodeURIComponent refuses) goes as U+FFFD, as a client's UTF-8 encoder sends it.
 */
export function percentEncode(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.!~*'()]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * `text` without control characters (tab aside). uWebSockets.js never parses a head whose header
 * values hold one: it answers nothing and closes the connection at its idle timeout (about
 * 10 s; test/security.test.ts checks that), so such heads never reach the store's code.
 */
function headerSafe(text: string): string {
  return text.replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, '');
}

const TINY_JPEG = fixture('cat.jpg').toString('base64');
const VIDEO_HEAD = fixture('cat-zoom.mp4').subarray(0, 8192);

/** Strings a parser may choke on, beside arbitrary ones. */
const nastyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 64 }),
  fc.string({ unit: 'grapheme', maxLength: 64 }),
  fc.constantFrom('', ' ', '\u0000', '\uffff', '\ud800', '%', '%zz', '%00', '..', '../..', '\\', '::', 'null', 'NaN', '-0', '1e309', '0x10', '\r\n'),
  fc.integer({ min: 1, max: 20_000 }).map((n) => 'x'.repeat(n)),
);

/**
 * A value nested `depth` levels deep, kept symbolic: JSON.stringify (like any recursive walk)
 * overflows the stack long before JSON.parse does, so `toJsonText` writes it out as text.
 */
class Deep {
  constructor(readonly kind: 'array' | 'object', readonly depth: number) {}
}

/** JSON text of `value`, with every Deep written out in full. */
function toJsonText(value: unknown): string {
  const text = JSON.stringify(value, (_key, v: unknown) => (v instanceof Deep ? `@@deep:${v.kind}:${v.depth}@@` : v)) ?? 'null';
  return text.replace(/"@@deep:(array|object):(\d+)@@"/g, (_, kind: string, depth: string) => {
    const n = Number(depth);
    return kind === 'array' ? '['.repeat(n) + ']'.repeat(n) : '{"a":'.repeat(n) + '1' + '}'.repeat(n);
  });
}

/** JSON values, including deep nesting (arrays or objects up to 200,000 levels down). */
const nastyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  nastyString,
  fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 0.1, -1, true, null),
  fc.tuple(fc.constantFrom<'array' | 'object'>('array', 'object'), fc.integer({ min: 100, max: 200_000 })).map(([kind, depth]) => new Deep(kind, depth)),
);

const TOP_FIELDS = [
  'solution', 'workflow_id', 'workflowId', 'workflow_version', 'inference_timestamp', 'inferenceTimestamp', 'device_id', 'deviceId',
  'stream_id', 'image_id', 'event_schema', 'eventSchema', 'event_data', 'eventData', 'custom_metadata', 'customMetadata', 'images',
  'displayImagePosition', 'display_image_position', 'draft',
];

const detection = fc.record({
  class: nastyJson, x: nastyJson, y: fc.double({ noNaN: true }), width: fc.double({ noNaN: true }), height: fc.nat(), confidence: fc.double({ noNaN: true, min: -2, max: 2 }),
}, { requiredKeys: [] });

const imageEntry = fc.record({
  label: nastyJson,
  base64_image: fc.oneof(fc.constant(TINY_JPEG), fc.base64String({ maxLength: 200 }), nastyString, fc.constant(`data:image/jpeg;base64,${TINY_JPEG}`), fc.constant(TINY_JPEG.slice(0, -3))),
  inputBase64Image: fc.oneof(fc.base64String({ maxLength: 64 }), nastyJson),
  object_detections: fc.oneof(fc.array(detection, { maxLength: 4 }), nastyJson),
  classifications: nastyJson,
  metadata: fc.oneof(fc.dictionary(nastyString, fc.boolean(), { maxKeys: 5 }), nastyJson),
}, { requiredKeys: [] });

const VALID_EVENT = {
  inference_timestamp: '2026-11-22T01:00:00Z', event_schema: 'quality_check', event_data: { result: 'pass', external_id: 'lot-1' },
  device_id: 'fuzz', custom_metadata: { line: 'A', temperature: 21.5 }, images: [{ label: 'front', base64_image: TINY_JPEG }],
};

type Mutation = (body: Record<string, unknown>) => void;
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.tuple(fc.oneof(fc.constantFrom(...TOP_FIELDS), nastyString), nastyJson).map(([key, value]) => (b: Record<string, unknown>) => void (b[key] = value)),
  fc.constantFrom(...TOP_FIELDS).map((key) => (b: Record<string, unknown>) => void delete b[key]),
  fc.oneof(fc.dictionary(nastyString, nastyJson, { maxKeys: 8 }), fc.dictionary(fc.string(), fc.string(), { minKeys: 95, maxKeys: 110 }))
    .map((meta) => (b: Record<string, unknown>) => void (b.custom_metadata = meta)),
  fc.dictionary(fc.oneof(fc.constantFrom('result', 'externalId', 'external_id', 'value', 'feedback', 'relatedEventId'), nastyString), nastyJson, { maxKeys: 4 })
    .map((data) => (b: Record<string, unknown>) => void (b.event_data = data)),
  fc.constantFrom('quality_check', 'inventory_count', 'safety_alert', 'operator_feedback', 'custom', 'Custom', '').map((s) => (b: Record<string, unknown>) => void (b.event_schema = s)),
  fc.array(imageEntry, { maxLength: 4 }).map((images) => (b: Record<string, unknown>) => void (b.images = images)),
);

/** A create body as sent: usually a mutated valid event, sometimes any JSON or broken text. */
export const createBody: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.array(mutation, { maxLength: 3 }), fc.boolean()).map(([mutations, draft]) => {
    const body: Record<string, unknown> = structuredClone({ ...VALID_EVENT, draft });
    for (const mutate of mutations) mutate(body);
    return toJsonText(body);
  }) },
  { weight: 1, arbitrary: nastyJson.map(toJsonText) },
  { weight: 1, arbitrary: fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), nastyString).map(([cut, tail]) => {
    const text = JSON.stringify(VALID_EVENT);
    return text.slice(0, Math.floor(cut * text.length)) + tail;
  }) },
);

const QUERY_NAMES = ['limit', 'device_id', 'device_ids', 'event_schema', 'event_schemas', 'workflow_id', 'workflow_ids', 'external_id',
  'external_ids', 'related_event_id', 'sort_direction', 'metadata_filter', 'start_time', 'end_time', 'include_drafts'];
const queryValue = fc.oneof(
  nastyString,
  fc.constantFrom('0', '1', '1000', '1001', '-1', '1.5', '1e3', ' 10', '9'.repeat(400), 'asc', 'desc', 'DESC', 'true', 'false', 'yes', 'maybe', 'cam-1,,cam-2', ','),
  fc.constantFrom('2026-11-22T01:00:00Z', '2026-11-22', '2026-13-45T99:99:99Z', '+275760-09-13T00:00:00Z', '2026-11-22T01:00:00.123456789+05:30', '1970-01-01T00:00:00Z', '0000-00-00'),
);
/** One metadata_filter: key:value, key:op:value, or anything. */
export const metadataFilter: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(fc.oneof(fc.constantFrom('line', 'temperature', 'seq', 'hot'), nastyString), queryValue).map(([k, v]) => `${k}:${v}`),
  fc.tuple(fc.oneof(fc.constantFrom('line', 'temperature'), nastyString), fc.oneof(fc.constantFrom('eq', 'ne', 'gt', 'lt', 'gte', 'lte'), nastyString), queryValue).map(([k, op, v]) => `${k}:${op}:${v}`),
  nastyString,
);

/** A query string (without `?`), percent-encoded or raw with broken escapes. */
export const queryString: fc.Arbitrary<string> = fc.tuple(
  fc.array(fc.oneof(
    fc.tuple(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...QUERY_NAMES) }, { weight: 1, arbitrary: nastyString }), queryValue),
    fc.tuple(fc.constant('metadata_filter'), metadataFilter),
  ), { maxLength: 8 }),
  fc.boolean(),
).map(([pairs, raw]) => pairs.map(([k, v]) => (raw ? `${k.replace(/[\s#]/g, '')}=${v.replace(/[\s#]/g, '')}` : `${percentEncode(k)}=${percentEncode(v)}`)).join('&'));

const rangeNumber = fc.oneof(fc.constant(''), fc.nat({ max: 600_000 }).map(String), fc.constantFrom('-5', ' 7 ', '1e3', '9'.repeat(30), '0x10', '+3'));
/** A Range header value: well-formed, out of bounds, several ranges, other units, or anything. */
export const rangeHeader: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(rangeNumber, rangeNumber).map(([a, b]) => `bytes=${a}-${b}`) },
  fc.array(fc.tuple(fc.nat(300_000), fc.nat(300_000)), { minLength: 2, maxLength: 4 }).map((rs) => `bytes=${rs.map(([a, b]) => `${a}-${b}`).join(',')}`),
  fc.tuple(fc.constantFrom('items', 'Bytes', 'bytes ', ''), rangeNumber).map(([unit, n]) => `${unit}=${n}-`),
  nastyString.map(headerSafe),
);

const headerValue = fc.oneof(nastyString.map((s) => s.replace(/[\r\n]/g, '')), fc.integer({ min: 1000, max: 100_000 }).map((n) => 'h'.repeat(n)));
const part = fc.record({
  name: fc.oneof({ weight: 3, arbitrary: fc.constantFrom('file', 'label', 'content_type') }, { weight: 1, arbitrary: nastyString }),
  filename: fc.option(fc.oneof(fc.constant('clip.mp4'), nastyString), { nil: undefined }),
  contentType: fc.option(fc.oneof(fc.constantFrom('video/mp4', 'text/csv', 'application/octet-stream'), nastyString), { nil: undefined }),
  extraHeaders: fc.array(fc.tuple(fc.constantFrom('X-Extra', 'Content-Transfer-Encoding', 'Content-Length'), headerValue), { maxLength: 3 }),
  data: fc.oneof(fc.constant(VIDEO_HEAD), fc.uint8Array({ maxLength: 2048 }).map((a) => Buffer.from(a)), fc.constant(Buffer.from('a,b\n1,2\n')), fc.constant(Buffer.alloc(0))),
});

/** A multipart body as sent, with the Content-Type header it goes with. */
export interface MultipartCase {
  contentType: string;
  body: Buffer;
  /** The bytes a store must keep when it accepts the body (one `file` part with a filename, not truncated). */
  expectedFile: Buffer | undefined;
}

/** Multipart bodies: mostly well-formed, with wrong boundaries, truncation, huge or many parts. */
export const multipartBody: fc.Arbitrary<MultipartCase> = fc.record({
  boundary: fc.oneof(fc.constant('fuzzB0undary'), fc.stringMatching(/^[A-Za-z0-9'()+_,./:=?-]{1,70}$/)),
  declared: fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: nastyString }),
  typeForm: fc.constantFrom('form', 'form', 'form', 'none', 'mixed', 'quoted'),
  parts: fc.oneof({ weight: 5, arbitrary: fc.array(part, { maxLength: 6 }) }, { weight: 1, arbitrary: fc.array(part, { minLength: 20, maxLength: 60 }) }),
  closing: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  cut: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
}).map(({ boundary, declared, typeForm, parts, closing, cut }) => {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name.replace(/"/g, '')}"${p.filename === undefined ? '' : `; filename="${p.filename.replace(/"/g, '')}"`}`;
    const headers = [`Content-Disposition: ${disposition}`, ...(p.contentType ? [`Content-Type: ${p.contentType}`] : []), ...p.extraHeaders.map(([k, v]) => `${k}: ${v}`)];
    chunks.push(Buffer.from(`--${boundary}\r\n${headers.join('\r\n')}\r\n\r\n`), p.data, Buffer.from('\r\n'));
  }
  if (closing) chunks.push(Buffer.from(`--${boundary}--\r\n`));
  const whole = Buffer.concat(chunks);
  const body = cut === undefined ? whole : whole.subarray(0, Math.floor(cut * whole.length));
  const onBoundary = headerSafe(declared ?? boundary);
  const contentType = { form: `multipart/form-data; boundary=${onBoundary}`, none: 'multipart/form-data', mixed: `multipart/mixed; boundary=${onBoundary}`, quoted: `multipart/form-data; boundary="${onBoundary}"` }[typeForm];
  const files = parts.filter((p) => p.name === 'file' && p.filename !== undefined);
  const wellFormed = cut === undefined && closing && declared === undefined && typeForm !== 'none' && typeForm !== 'mixed';
  return { contentType, body, expectedFile: wellFormed && files.length === 1 ? files[0].data : undefined };
});

/** A path id as written in the request line: percent-encoded, double-encoded, or raw. */
export const pathId: fc.Arbitrary<string> = fc.tuple(
  fc.oneof(nastyString, fc.uuid(), fc.constantFrom('..', '../../etc/passwd', 'seg-00000001.blob', '..%2f..%2fstore.lock', 'latest', 'latest/query', '')),
  fc.constantFrom('encoded', 'double', 'raw'),
).map(([id, mode]) => {
  if (mode === 'encoded') return percentEncode(id);
  if (mode === 'double') return percentEncode(percentEncode(id));
  return id.replace(/[^A-Za-z0-9._~!$&'()*+,;=:@%/-]/g, '');
});
