/**
 * The page's calls to the store, with its key (docs/API.md, "Authentication"). The key is asked
 * for once and kept in localStorage; it travels as `X-API-Key` on every fetch, and as `api_key`
 * in the query only for the live stream, as an EventSource cannot set headers (docs/API.md,
 * "Live stream"). The page is served by the store itself, so every call is same-origin and passes
 * the store's browser guard (docs/API.md, "Browsers"); the page only reads (GET).
 */

const KEY_ITEM = 'edge-event-store.api_key';

/** The store answered 401: no key, or not the store's key. */
export class Unauthorized extends Error {
  constructor() {
    super('the store refused the key (401)');
  }
}

/** The store answered another error status; `detail` is its body's `detail` when a string. */
export class RequestFailed extends Error {
  constructor(path: string, readonly status: number, readonly detail: string | undefined) {
    super(`${path}: ${status}${detail === undefined ? '' : ` ${detail}`}`);
  }
}

/** The key kept in localStorage, '' when none (or when storage is unavailable). */
export function storedKey(): string {
  try {
    return localStorage.getItem(KEY_ITEM) ?? '';
  } catch {
    return '';
  }
}

/** Keeps `key` in localStorage for the next visits. */
export function saveKey(key: string): void {
  try {
    localStorage.setItem(KEY_ITEM, key);
  } catch {
    // Private windows may refuse storage: the key then lasts as long as the page.
    sessionKey = key;
  }
}

/** The key of this page when localStorage refused it. */
let sessionKey = '';

const currentKey = (): string => storedKey() || sessionKey;

/** How many times more a GET answered 503 with Retry-After is sent, each after the wait the store asks. */
const BUSY_RETRIES = 3;
/** The longest Retry-After (seconds) the page waits out; a longer one is shown as the failure it is. */
const LONGEST_RETRY_AFTER_SECONDS = 30;

/**
 * The wait a 503 asks for (ms): its `Retry-After` in seconds (RFC 9110, 10.2.3), or undefined when it
 * has none the page would wait out. The store sends it with its back-pressure answers, e.g.
 * `thumbnails_busy` when many thumbnails are asked at once (docs/API.md, "Thumbnails").
 */
function busyWaitMs(response: Response): number | undefined {
  if (response.status !== 503) return undefined;
  const seconds = Number(response.headers.get('Retry-After') ?? NaN);
  return Number.isInteger(seconds) && seconds >= 0 && seconds <= LONGEST_RETRY_AFTER_SECONDS ? seconds * 1000 : undefined;
}

/**
 * GETs `path` with the key; a 503 with Retry-After is asked again after it, up to BUSY_RETRIES times.
 * @throws Unauthorized on 401; RequestFailed, naming the status and the store's `detail`, on any
 *   other non-2xx answer
 */
async function get(path: string): Promise<Response> {
  const key = currentKey();
  let response = await fetch(path, { headers: key === '' ? {} : { 'X-API-Key': key } });
  for (let retries = 0; retries < BUSY_RETRIES; retries++) {
    const wait = busyWaitMs(response);
    if (wait === undefined) break;
    await response.text(); // read whole, the connection stays reusable
    await new Promise((waited) => setTimeout(waited, wait));
    response = await fetch(path, { headers: key === '' ? {} : { 'X-API-Key': key } });
  }
  if (response.status === 401) throw new Unauthorized();
  if (!response.ok) {
    const detail = await response.json().then((body: { detail?: unknown }) => body.detail, () => undefined);
    throw new RequestFailed(path, response.status, typeof detail === 'string' ? detail : undefined);
  }
  return response;
}

/** GETs the JSON answer of `path` (see `get` for the errors). */
export async function getJson<T>(path: string): Promise<T> {
  return (await get(path)).json() as Promise<T>;
}

/** GETs the bytes of `path` (a file download) as a Blob (see `get` for the errors). */
export async function getBlob(path: string): Promise<Blob> {
  return (await get(path)).blob();
}

/** GETs the bytes of `path` as a Blob, with the answer's headers (see `get` for the errors). */
export async function getBlobAnswer(path: string): Promise<{ blob: Blob; headers: Headers }> {
  const response = await get(path);
  return { blob: await response.blob(), headers: response.headers };
}

/** The URL of the live stream with `params` and, when there is one, the key as `api_key`. */
export function streamUrl(params: URLSearchParams): string {
  const query = new URLSearchParams(params);
  const key = currentKey();
  if (key !== '') query.set('api_key', key);
  return `/v2/events/stream?${query}`;
}
