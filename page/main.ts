/**
 * The operator page (docs/USAGE.md, "The operator page"): the newest events live, with their
 * images and boxes, filtered by device and schema, or the answer of a query of the event search
 * (docs/API.md, "Event search"); events per second; capacity and backlogs from /stats. Its parts: store-api.ts (the key and the calls), live-stream.ts (the stream),
 * event-list.ts, attachments.ts, thumbnail.ts and boxes.ts (the list; its files are saved with the
 * key; thumbnails load lazily from the store's thumbnail route), image-viewer.ts (an image at full size with its boxes), event-rate.ts (events per second),
 * stats-panel.ts (the gauges).
 *
 * On start, and whenever the filters change: the newest `LIST_LIMIT` matching events are read
 * with `GET /v2/events`, then the stream is opened with the same filters and `since` = the
 * newest of them, so no event is missed or shown twice in between (docs/API.md, "Live stream").
 * With a query, its newest `LIST_LIMIT` events are listed instead, once, without the stream; a
 * malformed query's error, with its caret, is shown. A 401 from any call shows the key form.
 */
import { EventList } from './event-list.js';
import { EventRate } from './event-rate.js';
import { LiveStream } from './live-stream.js';
import { getJson, RequestFailed, saveKey, storedKey, Unauthorized } from './store-api.js';
import type { EventPage, EventSearchPage, Stats } from './shapes.js';
import { renderStats } from './stats-panel.js';

/** Events the list keeps. */
const LIST_LIMIT = 50;
/** How often /stats is read (ms). */
const STATS_EVERY_MS = 5000;
/** A resume point before every event: the stream then sends every matching event there is. */
const BEFORE_EVERYTHING = '1970-01-01T00:00:00.000000Z';

function element<T extends HTMLElement = HTMLElement>(selector: string): T {
  const found = document.querySelector<T>(selector);
  if (!found) throw new Error(`the page has no ${selector}`);
  return found;
}

const keyForm = element<HTMLFormElement>('#key-form');
const filterForm = element<HTMLFormElement>('#filters');
const deviceInput = element<HTMLInputElement>('#filter-device');
const schemaInput = element<HTMLInputElement>('#filter-schema');
const queryInput = element<HTMLInputElement>('#filter-query');
const connection = element('#connection');
const problem = element('#problem');
const queryProblem = element('#query-problem');

const rate = new EventRate();
let stream: LiveStream | undefined;
let statsTimer: ReturnType<typeof setInterval> | undefined;
/** Bumped by every (re)start, so answers of an earlier one are ignored. */
let generation = 0;

/** Shows what went wrong (a 401 shows the key form instead); `undefined` clears it. */
function report(err: unknown): void {
  if (err instanceof Unauthorized) {
    askForKey();
    return;
  }
  problem.hidden = err === undefined;
  problem.textContent = err === undefined ? '' : String(err instanceof Error ? err.message : err);
}

// A thumbnail says itself that its image is gone; only a refused key concerns the whole page.
const listElement = element<HTMLOListElement>('#events');
const list = new EventList(listElement, LIST_LIMIT, (err) => err instanceof Unauthorized && askForKey());

/** Stops everything and shows the key form, saying whether a key was refused. */
function askForKey(): void {
  generation++;
  stream?.close();
  stream = undefined;
  clearInterval(statsTimer);
  statsTimer = undefined;
  list.clear();
  setConnection('no key');
  element('#key-refused').hidden = storedKey() === '';
  keyForm.hidden = false;
  element<HTMLInputElement>('#key-input').focus();
}

function setConnection(text: string): void {
  connection.textContent = text;
  connection.dataset.state = text;
}

/** The filters of the form, as list and stream parameters. */
function filters(): URLSearchParams {
  const params = new URLSearchParams();
  const device = deviceInput.value.trim();
  const schema = schemaInput.value.trim();
  if (device !== '') params.set('device_id', device);
  if (schema !== '') params.set('event_schema', schema);
  return params;
}

/** Lists the newest events `q` matches (no stream: a query's answer is not live). */
async function showSearch(q: string, current: number): Promise<void> {
  history.replaceState(null, '', `?${new URLSearchParams({ q })}`);
  try {
    const page = await getJson<EventSearchPage>(`/v2/events/search?${new URLSearchParams({ q, limit: String(LIST_LIMIT) })}`);
    if (current !== generation) return;
    for (const event of [...page.events].reverse()) list.upsert(event);
    listElement.dataset.answered = ''; // an empty list now says that nothing matches (page.css)
    setConnection('search');
  } catch (err) {
    if (current !== generation) return;
    setConnection('search');
    if (err instanceof Unauthorized) {
      askForKey();
      return;
    }
    // The store's detail: the reason, the query and a caret under the column (docs/API.md, "Event search").
    queryProblem.textContent = err instanceof RequestFailed && err.detail !== undefined ? err.detail : String(err instanceof Error ? err.message : err);
    queryProblem.hidden = false;
  }
}

async function refreshStats(): Promise<void> {
  const current = generation;
  try {
    const stats = await getJson<Stats>('/stats');
    if (current !== generation) return;
    renderStats(stats);
    report(undefined);
  } catch (err) {
    if (current === generation) report(err);
  }
}

/** (Re)starts the list, the stream and the /stats polling with the current filters. */
async function start(): Promise<void> {
  const current = ++generation;
  stream?.close();
  stream = undefined;
  list.clear();
  delete listElement.dataset.answered;
  rate.reset();
  report(undefined);
  queryProblem.hidden = true;
  setConnection('connecting');
  if (statsTimer === undefined) {
    statsTimer = setInterval(() => void refreshStats(), STATS_EVERY_MS);
    void refreshStats();
  }
  const q = queryInput.value.trim();
  if (q !== '') {
    await showSearch(q, current);
    return;
  }
  const params = filters();
  history.replaceState(null, '', params.size > 0 ? `?${params}` : location.pathname);
  let page: EventPage;
  try {
    page = await getJson<EventPage>(`/v2/events?${new URLSearchParams({ ...Object.fromEntries(params), limit: String(LIST_LIMIT) })}`);
  } catch (err) {
    if (current !== generation) return;
    if (err instanceof RequestFailed && err.status === 400) {
      // A filter the store refuses (an unknown event_schema): its reason, and no retry.
      queryProblem.textContent = err.detail ?? err.message;
      queryProblem.hidden = false;
      return;
    }
    report(err);
    if (!(err instanceof Unauthorized)) setTimeout(() => current === generation && void start(), 5000);
    return;
  }
  if (current !== generation) return;
  for (const event of [...page.events].reverse()) list.upsert(event);
  listElement.dataset.answered = '';
  stream = new LiveStream(params, page.events[0]?.created_at ?? BEFORE_EVERYTHING, {
    created(event) {
      rate.add();
      list.upsert(event);
    },
    updated: (event) => list.upsert(event),
    deleted: (id) => (id === null ? list.clear() : list.remove(id)),
    connected: (live) => setConnection(live ? 'live' : 'reconnecting'),
    // An EventSource does not say why it failed: /stats does (401 shows the key form).
    interrupted: () => void refreshStats(),
  });
}

keyForm.addEventListener('submit', (submitted) => {
  submitted.preventDefault();
  const input = element<HTMLInputElement>('#key-input');
  saveKey(input.value.trim());
  input.value = '';
  keyForm.hidden = true;
  void start();
});

// A filter applies when its input changes (Enter, or leaving the field).
filterForm.addEventListener('submit', (submitted) => submitted.preventDefault());
for (const input of [deviceInput, schemaInput, queryInput]) input.addEventListener('change', () => void start());

setInterval(() => {
  element('#rate').textContent = rate.perSecond().toFixed(1);
}, 1000);

const initial = new URLSearchParams(location.search);
deviceInput.value = initial.get('device_id') ?? '';
schemaInput.value = initial.get('event_schema') ?? '';
queryInput.value = initial.get('q') ?? '';
element('#loading').remove();
void start();
