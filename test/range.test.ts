/**
 * Range parsing (src/http/range.ts; docs/API.md, "Downloads"), every form against RFC 9110,
 * section 14, in one table. What a download answers over HTTP (status, Content-Range, bytes)
 * is download.test.ts's; the header length cap and a few ignored forms are hardening.test.ts's.
 *
 * The store serves one range: a header with several is ignored and the whole file sent, as
 * RFC 9110 section 14.2 allows ("A server MAY ignore the Range header field").
 */
import t from 'tap';
import type { AppError } from '../src/errors.js';
import { MAX_RANGE_HEADER_LENGTH, resolveRange, type ByteRange } from '../src/http/range.js';

type Outcome = ByteRange | 'whole file' | 416;

const big = '9'.repeat(40); // 1e40: past every integer a double holds exactly

/** [Range header, file size (bytes), what the store does] */
const cases: [string, number, Outcome][] = [
  // int-range: bytes=first-last, inclusive (RFC 9110 section 14.1.2).
  ['bytes=0-0', 1, { start: 0, end: 0 }],
  ['bytes=0-99', 100, { start: 0, end: 99 }],
  ['bytes=99-99', 100, { start: 99, end: 99 }],
  ['bytes=0-100', 100, { start: 0, end: 99 }], // a last-pos at or past the end means the end
  ['bytes=007-010', 100, { start: 7, end: 10 }], // leading zeros: still 1*DIGIT
  [`bytes=0-${big}`, 100, { start: 0, end: 99 }],
  [`bytes=5-${Number.MAX_SAFE_INTEGER + 2}`, 100, { start: 5, end: 99 }],
  // bytes=first-: from first to the end.
  ['bytes=0-', 1, { start: 0, end: 0 }],
  ['bytes=99-', 100, { start: 99, end: 99 }],
  // suffix-range: bytes=-n, the last n bytes; more than the file is the whole file as a range.
  ['bytes=-1', 1, { start: 0, end: 0 }],
  ['bytes=-1', 100, { start: 99, end: 99 }],
  ['bytes=-100', 100, { start: 0, end: 99 }],
  ['bytes=-101', 100, { start: 0, end: 99 }],
  ['bytes=-010', 100, { start: 90, end: 99 }],
  [`bytes=-${big}`, 100, { start: 0, end: 99 }],
  // A large file: offsets past 2^32 stay exact.
  ['bytes=4294967296-4294967299', 2 ** 40, { start: 2 ** 32, end: 2 ** 32 + 3 }],
  [`bytes=${2 ** 40 - 1}-`, 2 ** 40, { start: 2 ** 40 - 1, end: 2 ** 40 - 1 }],
  ['bytes=-2', 2 ** 40, { start: 2 ** 40 - 2, end: 2 ** 40 - 1 }],

  // Unsatisfiable (RFC 9110 section 14.1.2: first-pos at or past the length, or suffix-length 0): 416.
  ['bytes=1-', 1, 416],
  ['bytes=100-100', 100, 416],
  ['bytes=100-200', 100, 416],
  [`bytes=${big}-`, 100, 416],
  [`bytes=${big}-${big}`, 100, 416],
  ['bytes=-0', 1, 416],
  ['bytes=-000', 100, 416],
  // last-pos before first-pos is an invalid range-spec, which section 14.2 lets a server reject.
  ['bytes=10-9', 100, 416],
  ['bytes=99-0', 100, 416],

  // A zero-length file (section 14.1.2): "the only satisfiable form of range-spec in a GET
  // request is a suffix-range with a non-zero suffix-length". An int-range is unsatisfiable; a
  // suffix range is satisfiable but selects nothing a 206's Content-Range could name, so the
  // (empty) whole file is sent, as section 14.2 allows.
  ['bytes=0-', 0, 416],
  ['bytes=0-0', 0, 416],
  ['bytes=-0', 0, 416],
  ['bytes=-1', 0, 'whole file'],
  [`bytes=-${big}`, 0, 'whole file'],
  ['', 0, 'whole file'],

  // Whitespace (OWS) around the numbers is accepted; the unit must open the value.
  ['bytes=0-1 ', 100, { start: 0, end: 1 }],
  ['bytes=\t0-1\t', 100, { start: 0, end: 1 }],
  ['bytes= -5', 100, { start: 95, end: 99 }],
  ['bytes =0-1', 100, 'whole file'],
  [' bytes=0-1', 100, 'whole file'],

  // Several ranges, in any spelling: the whole file.
  ['bytes=0-1, 2-3', 100, 'whole file'],
  ['bytes=-1,0-0', 100, 'whole file'],
  ['bytes=0-50,25-75', 100, 'whole file'],
  ['bytes=0-,', 100, 'whole file'],
  ['bytes=,0-1', 100, 'whole file'],
  ['bytes=0-1,bytes=2-3', 100, 'whole file'],
  ['bytes=200-300,0-1', 100, 'whole file'], // ignored whole, not judged range by range

  // Malformed: not a byte-range the grammar allows, so ignored.
  ['', 100, 'whole file'],
  ['bytes', 100, 'whole file'],
  ['bytes=', 100, 'whole file'],
  ['=0-1', 100, 'whole file'],
  ['bytes=5', 100, 'whole file'],
  ['bytes=--1', 100, 'whole file'],
  ['bytes=1--2', 100, 'whole file'],
  ['bytes=0-1-2', 100, 'whole file'],
  ['bytes=+1-2', 100, 'whole file'],
  ['bytes=-+1', 100, 'whole file'],
  ['bytes=1.5-2', 100, 'whole file'],
  ['bytes=1e2-', 100, 'whole file'],
  ['bytes=Infinity-', 100, 'whole file'],
  ['bytes=NaN-1', 100, 'whole file'],
  ['bytes=1 2-3', 100, 'whole file'],
  ['bytes=\u0661-\u0662', 100, 'whole file'], // Arabic-Indic digits are not DIGIT
  ['bytes=\uff10-\uff11', 100, 'whole file'], // nor are fullwidth ones
  ['bytes=0-1\u0000', 100, 'whole file'],
];

/**
 * What the store does with `header` on a file of `size` bytes: the range it sends, the whole
 * file, or 416 (range_not_satisfiable with `Content-Range: bytes *\/size`, which
 * download.test.ts sees answer 416 over HTTP); anything else as text, so a row fails alone.
 */
function outcomeOf(header: string, size: number): Outcome | string {
  try {
    return resolveRange(header, size) ?? 'whole file';
  } catch (err) {
    const { code, headers } = err as AppError;
    return code === 'range_not_satisfiable' && headers?.['Content-Range'] === `bytes */${size}` ? 416 : `threw ${String(err)}`;
  }
}

const show = (outcome: Outcome) => (typeof outcome === 'object' ? `${outcome.start}-${outcome.end}` : String(outcome));

t.test('every form of Range against RFC 9110 section 14, one row each', async (t) => {
  t.ok(cases.length > 60, `${cases.length} rows`);
  for (const [header, size, expected] of cases) {
    const name = `${JSON.stringify(header.length > 40 ? `${header.slice(0, 40)}...` : header)} on ${size} bytes`;
    t.same(outcomeOf(header, size), expected, `${name}: ${show(expected)}`);
  }
});

t.test('a header of exactly MAX_RANGE_HEADER_LENGTH characters is read; one more answers 416 unread', async (t) => {
  const atCap = `bytes=${'0'.repeat(MAX_RANGE_HEADER_LENGTH - 'bytes=1-2'.length)}1-2`;
  t.equal(atCap.length, MAX_RANGE_HEADER_LENGTH);
  t.same(outcomeOf(atCap, 100), { start: 1, end: 2 }, 'leading zeros up to the cap: still bytes 1-2');
  const overCap = `bytes=0${atCap.slice('bytes='.length)}`;
  t.equal(overCap.length, MAX_RANGE_HEADER_LENGTH + 1);
  t.equal(outcomeOf(overCap, 100), 416, 'the same range with one more zero: 416');
  t.equal(outcomeOf(`items=${'x'.repeat(MAX_RANGE_HEADER_LENGTH)}`, 100), 416, 'the cap comes before the unit is read');
});

t.test('every satisfiable answer lies within the file and matches the header it came from', async (t) => {
  // Exhaustive over small files: first-last, first- and -suffix for every value 0..size+1.
  let ranges = 0;
  for (let size = 0; size <= 6; size++) {
    for (let a = 0; a <= size + 1; a++) {
      const headers: [string, ByteRange | undefined][] = [[`bytes=${a}-`, a < size ? { start: a, end: size - 1 } : undefined]];
      if (a > 0) headers.push([`bytes=-${a}`, size > 0 ? { start: Math.max(0, size - a), end: size - 1 } : undefined]);
      for (let b = a; b <= size + 1; b++) headers.push([`bytes=${a}-${b}`, a < size ? { start: a, end: Math.min(b, size - 1) } : undefined]);
      for (const [header, expected] of headers) {
        if (expected) {
          ranges++;
          t.same(outcomeOf(header, size), expected, `${header} on ${size} bytes`);
        } else {
          // Unsatisfiable: 416, except a suffix range on an empty file (the whole, empty, file).
          const refused = header.startsWith('bytes=-') && size === 0 ? 'whole file' : 416;
          t.same(outcomeOf(header, size), refused, `${header} on ${size} bytes: ${refused}`);
        }
      }
    }
  }
  t.ok(ranges > 50, `${ranges} satisfiable ranges checked`);
});
