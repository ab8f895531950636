/**
 * Do the store's derived answers agree with its records? Given every record (listed with
 * paging), checks the `/stats` and `/events/count/stats` counters, the list route's filters
 * (exact, multi-value, metadata with each kind of operator, drafts, time bounds, both sort
 * directions) and queries of the event search (classes, alone and with other conditions) against
 * the same filters applied to the records here.
 */
import type { StoreClient } from './http-client.js';
import { listAllEvents, searchAllEvents, type ListedEvent } from './store-reads.js';

type Filter = [query: string, matches: (event: ListedEvent) => boolean];

function filtersFor(events: ListedEvent[]): Filter[] {
  const seqs = events.map((e) => e.custom_metadata.seq).filter((s): s is number => typeof s === 'number').sort((a, b) => a - b);
  const midSeq = seqs[Math.floor(seqs.length / 2)] ?? 0;
  const from = events[Math.floor(events.length / 3)]?.created_at ?? '2000-01-01T00:00:00Z';
  const to = events[Math.floor((2 * events.length) / 3)]?.created_at ?? '2100-01-01T00:00:00Z';
  const related = events.find((e) => e.event_schema === 'operator_feedback')?.event_data.related_event_id as string | undefined;
  const meta = (e: ListedEvent, key: string) => e.custom_metadata[key];
  const filters: Filter[] = [
    ['device_id=cam-1', (e) => e.device_id === 'cam-1'],
    ['device_ids=cam-0,cam-2', (e) => e.device_id === 'cam-0' || e.device_id === 'cam-2'],
    ['event_schema=safety_alert', (e) => e.event_schema === 'safety_alert'],
    ['event_schemas=custom,inventory_count&include_drafts=false', (e) => ['custom', 'inventory_count'].includes(e.event_schema) && !e.draft],
    ['workflow_id=wf-1', (e) => e.workflow_id === 'wf-1'],
    ['external_id=lot-7', (e) => e.event_data.external_id === 'lot-7'],
    ['include_drafts=false', (e) => !e.draft],
    ['metadata_filter=line:B', (e) => meta(e, 'line') === 'B'],
    ['metadata_filter=hot:true&device_id=cam-3', (e) => meta(e, 'hot') === true && e.device_id === 'cam-3'],
    ['metadata_filter=line:ne:A&metadata_filter=temperature:lt:30', (e) => meta(e, 'line') !== undefined && meta(e, 'line') !== 'A' && (meta(e, 'temperature') as number) < 30],
    [`metadata_filter=seq:gte:${midSeq}`, (e) => (meta(e, 'seq') as number) >= midSeq],
    [`metadata_filter=seq:gt:${midSeq}&metadata_filter=seq:lte:${midSeq + 40}`, (e) => (meta(e, 'seq') as number) > midSeq && (meta(e, 'seq') as number) <= midSeq + 40],
    [`start_time=${from}&end_time=${to}`, (e) => e.created_at >= from && e.created_at <= to],
    ['sort_direction=desc&device_id=cam-2', (e) => e.device_id === 'cam-2'],
  ];
  if (related) filters.push([`related_event_id=${related}`, (e) => e.event_data.related_event_id === related]);
  return filters;
}

/**
 * Compares the store's counters and filtered queries with `events` (every record, ascending).
 * @returns one line per disagreement (empty when all agree)
 */
export async function checkAgreement(client: StoreClient, events: ListedEvent[]): Promise<string[]> {
  const problems: string[] = [];
  const expect = (what: string, got: unknown, want: unknown) => {
    if (got !== want) problems.push(`${what}: store says ${got}, records say ${want}`);
  };
  const stats = (await client.getJson('/stats')).current;
  expect('/stats total_events', stats.total_events, events.length);
  expect('/stats total_images', stats.total_images, events.reduce((n, e) => n + e.images.length, 0));
  expect('/stats draft_events', stats.draft_events, events.filter((e) => e.draft).length);
  const counts = await client.getJson('/events/count/stats');
  expect('/events/count/stats total_count', counts.total_count, events.length);
  expect('/events/count/stats filtered_count', counts.filtered_count, events.length);
  const filteredCounts = await client.getJson('/events/count/stats?device_id=cam-2&event_schema=custom');
  expect('/events/count/stats?device_id=cam-2&event_schema=custom filtered_count', filteredCounts.filtered_count,
    events.filter((e) => e.device_id === 'cam-2' && e.event_schema === 'custom').length);

  for (const [query, matches] of filtersFor(events)) {
    const want = events.filter(matches).map((e) => e.id);
    if (query.includes('sort_direction=desc')) want.reverse();
    const got = (await listAllEvents(client, query)).map((e) => e.id);
    if (got.length !== want.length || got.some((id, i) => id !== want[i])) {
      const missing = want.filter((id) => !got.includes(id)).length;
      const extra = got.filter((id) => !want.includes(id)).length;
      problems.push(`GET /v2/events?${query}: ${got.length} events (${missing} missing, ${extra} extra${missing + extra === 0 ? ', order differs' : ''}), records say ${want.length}`);
    }
  }
  for (const [q, matches] of searchesFor()) {
    const want = events.filter(matches).map((e) => e.id).reverse();
    const got = (await searchAllEvents(client, q)).map((e) => e.id);
    if (got.length !== want.length || got.some((id, i) => id !== want[i])) {
      const missing = want.filter((id) => !got.includes(id)).length;
      const extra = got.filter((id) => !want.includes(id)).length;
      problems.push(`GET /v2/events/search?q=${q}: ${got.length} events (${missing} missing, ${extra} extra${missing + extra === 0 ? ', order differs' : ''}), records say ${want.length}`);
    }
  }
  return problems;
}

/** Queries of the event search over the harness's events (detections of cat, box, person). */
function searchesFor(): Filter[] {
  const classes = (e: ListedEvent) => e.images.flatMap((image) => (image.object_detections as { class: string }[]).map((d) => d.class));
  return [
    ['class:cat', (e) => classes(e).includes('cat')],
    ['class:person device:cam-1', (e) => classes(e).includes('person') && e.device_id === 'cam-1'],
    ['class:box>=2 OR (class:cat -draft:true)', (e) => classes(e).filter((c) => c === 'box').length >= 2 || (classes(e).includes('cat') && !e.draft)],
    ['meta.line:B -class:person', (e) => e.custom_metadata.line === 'B' && !classes(e).includes('person')],
  ];
}
