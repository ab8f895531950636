/**
 * The bound on JSON request bodies held in memory at once (MAX_INFLIGHT_BODY_BYTES;
 * docs/OPERATIONS.md, "Memory"). Every JSON body is read whole and parsed on the HTTP thread
 * (json-body.ts), and a create keeps its parsed body, decoded images and record until its answer:
 * without a bound, twenty 18.6 MB creates at once took the store past V8's heap limit (docs/RELIABILITY.md, "Memory under the largest valid creates").
 *
 * A body is held by its weight, from its first byte to the end of its request: its bytes plus what
 * parsing will add (`parsedExtraBytes`), counted as the bytes arrive, so that a body which would
 * not fit is refused before it is parsed. A declared body reserves its Content-Length before any
 * byte is read. What a request holds is given back when it ends, answered, failed or aborted (the
 * route table, route-table.ts). A request that would pass the bound is answered 503
 * `body_budget_full` with Retry-After, as a server that is "temporarily overloaded" (RFC 9110,
 * 15.6.4), unless it is the only one holding anything: any body the store takes can be stored.
 */
import v8 from 'node:v8';
import { AppError } from '../errors.js';

/**
 * The most one request may weigh, even alone (bytes): half of V8's heap limit in this thread, which
 * the create preparer's worker shares (`--max-old-space-size` sets both). A body past it would take
 * the parse past the heap limit, and V8 ends the whole process there (`FATAL ERROR: Reached heap
 * limit`); so it is refused 413 before it is parsed. At the defaults no valid create comes near it:
 * the heaviest weighs 47.4 MiB, the limit is 280 MiB under the unit's 512 MiB heap
 * (docs/OPERATIONS.md, "Memory").
 */
export function defaultRequestWeightLimit(): number {
  return Math.floor(v8.getHeapStatistics().heap_size_limit / 2);
}

/** Seconds a client refused for the budget is told to wait (`Retry-After`): one group commit or a few, in practice. */
export const BODY_BUDGET_RETRY_AFTER_SECONDS = 1;

/**
 * What V8 adds to a JSON text when it parses it, per `[` or `{` (an array or object: 56 to 72
 * bytes) and per `,` (a value in an array or object: 8 bytes for a number, a pointer for the
 * rest), in bytes. Measured with `v8.getHeapStatistics()` around `JSON.parse` on Node 20, 64-bit:
 * `[1,2],` (6 bytes of text) takes 72 once parsed, weighed 6 + 64 + 2 x 8 = 86; a detection of 80
 * bytes takes 144, weighed 192; a keypoint of 48 takes 96, weighed 144; `1,` in a flat array takes
 * 8, weighed 10; base64 text takes its length, weighed the same. Brackets and commas inside strings
 * count too: the weight errs high, never low.
 */
export const PARSED_WEIGHT = { container: 64, value: 8 } as const;

const COMMA = 0x2c;
const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;

/**
 * `,`, `[` and `{` are counted by `Buffer.indexOf` jumps (a memchr each, about 20 ns a call) while
 * there are at most JUMPS_BEFORE_DENSE of them plus one per SPARSE_BYTES of the chunk read so far;
 * past that the chunk is dense with them, and one pass over its bytes (about 1.1 ns a byte) is
 * cheaper. An image event's 56 KB body holds 54 of them, around 44 KB of base64 that the pass
 * read in 60 to 75 µs and the jumps skip in 2 (native-bench/PROFILE.md, "Image events: the body's
 * pass and the base64's white space").
 */
const JUMPS_BEFORE_DENSE = 256;
const SPARSE_BYTES = 256;

/** Chunks shorter than this (bytes) are counted by the pass: a small event's 850 bytes take it in a microsecond. */
const JUMP_MIN_BYTES = 4096;

/**
 * What parsing `chunk` of a JSON text adds to its bytes in V8's heap, by PARSED_WEIGHT. A chunk
 * where `,`, `[` and `{` are sparse (base64, long strings) is counted by `Buffer.indexOf` jumps, a
 * memchr each; any other by one pass over its bytes (a jump per occurrence would take about 4 ms
 * for the 0.96 MB of 100,000 `[x,y]` pairs, the pass 1 ms).
 * @returns bytes (an upper estimate)
 */
export function parsedExtraBytes(chunk: Buffer): number {
  if (chunk.length >= JUMP_MIN_BYTES) {
    const values = sparseCount(chunk, COMMA);
    const containers = values < 0 ? values : sparseCount(chunk, OPEN_BRACKET) + sparseCount(chunk, OPEN_BRACE);
    if (containers >= 0) return PARSED_WEIGHT.container * containers + PARSED_WEIGHT.value * values;
  }
  return passWeight(chunk);
}

/** `parsedExtraBytes` of `chunk` by one pass over its bytes. */
function passWeight(chunk: Buffer): number {
  let containers = 0;
  let values = 0;
  for (let i = 0; i < chunk.length; i++) {
    const byte = chunk[i];
    if (byte === COMMA) values++;
    else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) containers++;
  }
  return PARSED_WEIGHT.container * containers + PARSED_WEIGHT.value * values;
}

/**
 * How many times `byte` occurs in `chunk`, by `Buffer.indexOf` jumps; -Infinity once the chunk
 * proves dense with it (JUMPS_BEFORE_DENSE).
 */
function sparseCount(chunk: Buffer, byte: number): number {
  let count = 0;
  for (let at = chunk.indexOf(byte); at !== -1; at = chunk.indexOf(byte, at + 1)) {
    if (++count > JUMPS_BEFORE_DENSE + at / SPARSE_BYTES) return -Infinity;
  }
  return count;
}

/** The bytes one request holds of a BodyBudget, given back once by `release`. */
export interface BodyHold {
  /** Bytes this request holds now. */
  readonly bytes: number;
  /**
   * Reserves `bytes` more for this request: always when it is the only request holding any,
   * else only within the limit; never past the limit of one request.
   * @throws AppError record_too_large (413) past the limit of one request; body_budget_full (503,
   *   with Retry-After) when the budget cannot take them; what the request held stays held until
   *   `release`
   */
  take(bytes: number): void;
  /** Gives back everything this request holds; later calls do nothing. */
  release(): void;
}

/**
 * The JSON bodies under way, weighed (bytes), against MAX_INFLIGHT_BODY_BYTES: one per HTTP server,
 * built by it (server.ts) and handed to the route table, which gives each JSON request a hold.
 */
export class BodyBudget {
  private heldBytes = 0;
  private refused = 0;

  /**
   * @param limit bytes (weights) of bodies held at once (MAX_INFLIGHT_BODY_BYTES)
   * @param requestLimit bytes (weight) one request may hold, even alone (`defaultRequestWeightLimit`)
   */
  constructor(readonly limit: number, readonly requestLimit = defaultRequestWeightLimit()) {}

  /** Bytes (weights) held now, over every request (for /metrics, `edge_events_inflight_body_bytes`). */
  get held(): number {
    return this.heldBytes;
  }

  /** Requests refused with body_budget_full since the start. */
  get refusedTotal(): number {
    return this.refused;
  }

  /** A hold for one request, holding nothing yet. */
  hold(): BodyHold {
    let bytes = 0;
    let released = false;
    return {
      get bytes() {
        return bytes;
      },
      take: (more) => {
        if (released) return;
        if (bytes + more > this.requestLimit) {
          throw new AppError('record_too_large', `Record would weigh ${bytes + more} bytes once parsed (its bytes and what parsing adds to them), `
            + `past the ${this.requestLimit} bytes one request may hold: half of the store's V8 heap limit (--max-old-space-size)`);
        }
        // A request alone is let in whatever it weighs, so every valid create can be stored.
        const alone = this.heldBytes === bytes;
        if (this.heldBytes + more > this.limit && !alone) {
          this.refused++;
          throw new AppError('body_budget_full', `Request bodies held in memory would pass MAX_INFLIGHT_BODY_BYTES (${this.limit} bytes): `
            + `${this.heldBytes} held, this one needs ${bytes + more}; retry after ${BODY_BUDGET_RETRY_AFTER_SECONDS} s`, {
            headers: { 'Retry-After': String(BODY_BUDGET_RETRY_AFTER_SECONDS) },
          });
        }
        this.heldBytes += more;
        bytes += more;
      },
      release: () => {
        if (released) return;
        released = true;
        this.heldBytes -= bytes;
        bytes = 0;
      },
    };
  }
}
