/**
 * A small HTTP client for the harness scripts: every request has a deadline (a hang is a
 * failure, never a wait), answers come back whole with their timing, and network failures
 * (connection refused or reset, as when the store is killed) are thrown for the caller to
 * classify.
 */

/** A complete answer. `ms`: time from sending to the last body byte. */
export interface Answer {
  status: number;
  headers: Headers;
  bytes: Buffer;
  ms: number;
  /** The body parsed as JSON (undefined when empty). */
  json<T = any>(): T;
}

export interface RequestOptions {
  /** Sent as JSON with `Content-Type: application/json`. */
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
  /** Overrides the client's deadline (ms). */
  timeoutMs?: number;
}

/** Requests to one store. */
export class StoreClient {
  /**
   * @param baseUrl e.g. `http://127.0.0.1:8001`
   * @param timeoutMs deadline of each request, body included (ms)
   * @param headers sent with every request (e.g. X-API-Key)
   */
  constructor(readonly baseUrl: string, private readonly timeoutMs = 30_000, private readonly headers: Record<string, string> = {}) {}

  /**
   * Sends one request and reads the whole answer.
   * @throws the fetch error on a network failure or when the deadline passes
   */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<Answer> {
    const started = performance.now();
    const headers: Record<string, string> = { ...this.headers, ...options.headers };
    let body = options.body;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    }
    const response = await fetch(this.baseUrl + path, {
      method,
      headers,
      body,
      signal: AbortSignal.timeout(options.timeoutMs ?? this.timeoutMs),
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    return {
      status: response.status,
      headers: response.headers,
      bytes,
      ms: performance.now() - started,
      json: () => (bytes.length === 0 ? undefined : JSON.parse(bytes.toString('utf8'))),
    };
  }

  /** GET, expecting `status` (default 200); returns the parsed JSON body. @throws Error otherwise */
  async getJson<T = any>(path: string, status = 200): Promise<T> {
    const answer = await this.request('GET', path);
    if (answer.status !== status) throw new Error(`GET ${path} answered ${answer.status}: ${answer.bytes.toString('utf8', 0, 300)}`);
    return answer.json<T>();
  }
}
