/**
 * Reading a whole store back over HTTP, for the harnesses' checks: every event of a query (paged
 * with `next_timestamp`, never skipping or repeating one), and file bytes compared with what was
 * sent.
 */
import type { StoreClient } from './http-client.js';

/** An event as the GET routes return it (the fields the harnesses read). */
export interface ListedEvent {
  id: string;
  created_at: string;
  device_id: string | null;
  workflow_id: string | null;
  inference_timestamp: string;
  event_schema: string;
  event_data: Record<string, unknown>;
  custom_metadata: Record<string, string | number | boolean>;
  images: { file_id: string | null; label: string | null; object_detections: unknown[]; classifications: unknown[] }[];
  videos: ListedFile[];
  local_only_files: ListedFile[];
  original_file_count: number;
  current_file_count: number;
  draft: boolean;
  finalized_at: string | null;
}

/** A video or local-only file as an event lists it. */
export interface ListedFile {
  file_id: string;
  label: string;
  content_type: string;
  size_bytes: number;
}

const PAGE = 1000;

/**
 * Every event `GET /v2/events?<query>` matches, in the query's order, following
 * `next_timestamp` (as `start_time` ascending, `end_time` descending).
 * @param query filters, without `limit` or the paging bound; ascending unless it says
 *   `sort_direction=desc` (the route's own default is descending)
 * @throws Error when a page does not answer 200, or when paging repeats an event
 */
export async function listAllEvents(client: StoreClient, query = ''): Promise<ListedEvent[]> {
  const params = new URLSearchParams(query);
  if (!params.has('sort_direction')) params.set('sort_direction', 'asc');
  const bound = params.get('sort_direction') === 'desc' ? 'end_time' : 'start_time';
  params.set('limit', String(PAGE));
  const events: ListedEvent[] = [];
  const seen = new Set<string>();
  for (let pages = 0; ; pages++) {
    if (pages > 10_000) throw new Error(`GET /v2/events?${query}: paging does not end`);
    const page = await client.getJson<{ events: ListedEvent[]; next_timestamp: string | null }>(`/v2/events?${params}`);
    for (const event of page.events) {
      if (seen.has(event.id)) throw new Error(`GET /v2/events?${query}: event ${event.id} listed twice`);
      seen.add(event.id);
      events.push(event);
    }
    if (page.next_timestamp === null) return events;
    params.set(bound, page.next_timestamp);
  }
}

/**
 * Every event a query of the event search matches (docs/API.md, "Event search"), newest first,
 * following next_cursor.
 * @throws Error when an event is listed twice or paging does not end
 */
export async function searchAllEvents(client: StoreClient, q: string): Promise<ListedEvent[]> {
  const events: ListedEvent[] = [];
  const seen = new Set<string>();
  const params = new URLSearchParams({ q, limit: String(PAGE) });
  for (let pages = 0; ; pages++) {
    if (pages > 10_000) throw new Error(`GET /v2/events/search?q=${q}: paging does not end`);
    const page = await client.getJson<{ events: ListedEvent[]; next_cursor: string | null }>(`/v2/events/search?${params}`);
    for (const event of page.events) {
      if (seen.has(event.id)) throw new Error(`GET /v2/events/search?q=${q}: event ${event.id} listed twice`);
      seen.add(event.id);
      events.push(event);
    }
    if (page.next_cursor === null) return events;
    params.set('cursor', page.next_cursor);
  }
}

/** What a download of a file gave compared with the bytes expected. */
export type FileCheck = 'ok' | 'missing' | 'different';

/**
 * Downloads `path` (e.g. `/images/<id>`) and compares it with `expected`; with `range`, asks for
 * that inclusive slice and compares it with the same slice of `expected`.
 * @throws the network error, or Error on a status other than 200/206/404
 */
export async function checkFile(client: StoreClient, path: string, expected: Buffer, range?: [number, number]): Promise<FileCheck> {
  const headers: Record<string, string> = range ? { range: `bytes=${range[0]}-${range[1]}` } : {};
  const answer = await client.request('GET', path, { headers });
  if (answer.status === 404) return 'missing';
  if (answer.status !== (range ? 206 : 200)) throw new Error(`GET ${path} answered ${answer.status}: ${answer.bytes.toString('utf8', 0, 200)}`);
  const want = range ? expected.subarray(range[0], range[1] + 1) : expected;
  return answer.bytes.equals(want) ? 'ok' : 'different';
}

/**
 * Runs `work` over `items` with at most `parallel` under way at once.
 * @returns the results in input order
 */
export async function mapParallel<T, R>(items: readonly T[], parallel: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, lane));
  return results;
}
