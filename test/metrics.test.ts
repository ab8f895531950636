/**
 * `GET /metrics` (docs/OPERATIONS.md, "Metrics") over real HTTP: the output passes Prometheus's
 * own parser and linter (`promtool check metrics`, Debian's `prometheus` package; .ci/run
 * installs it), and counters move as events are created and deleted.
 */
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { imageEvent, postJson, smallEvent } from './support/events.js';
import { requireProgram } from './support/host-program.js';
import { startStore } from './support/store-server.js';
import { until } from './support/waiting.js';

/** The value of the sample `name{labels}` as the exposition writes it (labels in prom-client's order). */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  if (!line) throw new Error(`no sample ${series}`);
  return Number(line.slice(series.length + 1));
}

t.test('the exposition passes promtool, and counters move with creates and deletions', async (t) => {
  // Checkpoints at the interval however few the creates (docs/STORAGE.md, "When a checkpoint runs").
  const store = await startStore({ CLEANUP_INTERVAL_SECONDS: '3600', MAX_RECORDS: '1', INDEX_CHECKPOINT_MAX_MS: '1000' });
  t.teardown(() => store.stop());
  const bodies = [imageEvent(), smallEvent()];
  for (const body of bodies) t.equal((await postJson(`${store.url}/v2/events`, body)).status, 201);
  await fetch(`${store.url}/no-such-route`).then((res) => res.arrayBuffer());

  // A checkpoint commits the creates to LMDB within INDEX_CHECKPOINT_MAX_MS.
  await until('a checkpoint was timed', async () => /^edge_events_commit_duration_seconds_count\{stage="index"\} [1-9]/m.test(await (await fetch(`${store.url}/metrics`)).text()));
  const res = await fetch(`${store.url}/metrics`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const text = await res.text();

  const check = spawnSync(requireProgram('promtool'), ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (check.error) throw check.error;
  // Exit 1: the text does not parse; 3: lint problems (a user's CI check fails on either).
  t.equal(check.status, 0, `promtool check metrics passes: ${check.stdout}${check.stderr}`);
  t.match(text, /^edge_events_nodejs_active_handles\{/m, 'the active handles stay exposed, by type');

  t.equal(sample(text, 'edge_events_ingested_events_total'), 2);
  t.equal(sample(text, 'edge_events_ingested_images_total'), 1);
  t.equal(sample(text, 'edge_events_ingested_bytes_total'), bodies.reduce((sum, body) => sum + Buffer.byteLength(JSON.stringify(body)), 0), 'the bytes of both create bodies');
  t.equal(sample(text, 'edge_events_http_requests_total{route="/v2/events",method="POST",status="201"}'), 2);
  t.equal(sample(text, 'edge_events_http_requests_total{route="unmatched",method="GET",status="404"}'), 1);
  t.ok(sample(text, 'edge_events_commit_duration_seconds_count{stage="log"}') >= 1, 'log appends timed');
  t.ok(sample(text, 'edge_events_commit_duration_seconds_count{stage="index"}') >= 1, 'checkpoint commits timed');
  t.ok(sample(text, 'edge_events_process_resident_memory_bytes') > 0, 'prom-client\'s process metrics');

  // Two records of MAX_RECORDS=1: the worker's limit check starts a cleanup within a second. The
  // labelled counter has no sample until that cleanup deletes.
  const after = await until('the cleanup deleted one', async () => {
    const text = await fetch(`${store.url}/metrics`).then((r) => r.text());
    return /^edge_events_deleted_events_total\{reason="max_records"\} 1$/m.test(text) && text;
  });
  t.equal(sample(after, 'edge_events_stored_events'), 1);
  t.equal(sample(after, 'edge_events_capacity_used_ratio{capacity="records"}'), 1, 'one record of MAX_RECORDS=1');
});

t.test('with API_KEY set, /metrics takes the key as X-API-Key or as api_key (Prometheus params)', async (t) => {
  const store = await startStore({ API_KEY: 'scrape-key' });
  t.teardown(() => store.stop());
  t.equal((await fetch(`${store.url}/metrics`)).status, 401);
  t.equal((await fetch(`${store.url}/metrics`, { headers: { 'x-api-key': 'scrape-key' } })).status, 200);
  t.equal((await fetch(`${store.url}/metrics?api_key=scrape-key`)).status, 200);
});

t.test('a scrape reports only true values: no empty loop-delay statistics, no NaN, no VmData as a heap', async (t) => {
  const store = await startStore();
  t.teardown(() => store.stop());
  // The first scrape, before the loop-delay histogram's first sample, and one right after it,
  // whose histogram prom-client has just reset.
  for (const when of ['first', 'second']) {
    const text = await (await fetch(`${store.url}/metrics`)).text();
    const untrue = text.split('\n').filter((line) => line !== '' && !line.startsWith('#'))
      .filter((line) => { const value = Number(line.slice(line.lastIndexOf(' ') + 1)); return !Number.isFinite(value) || (line.includes('eventloop_lag') && value > 3600); });
    t.same(untrue, [], `${when} scrape: every value a finite number, no loop delay of more than an hour`);
    t.notMatch(text, /^edge_events_process_heap_bytes /m, `${when} scrape: no process_heap_bytes (it is VmData)`);
    t.match(text, /^edge_events_nodejs_eventloop_lag_seconds /m, `${when} scrape: the lag measured at the scrape stays`);
  }
});

/** The samples of `name` in a scrape, by their value (none when the scrape left it out). */
function samplesOf(text: string, name: string): number[] {
  return text.split('\n').filter((line) => line.startsWith(`${name} `)).map((line) => Number(line.slice(name.length + 1)));
}

t.test('the loop delay is reported beyond the once-a-second sampling: an idle store reads near 0, a stall of known length shows in max', async (t) => {
  const store = await startStore();
  t.teardown(() => store.stop());
  const scrape = async () => (await fetch(`${store.url}/metrics`)).text();
  const sampled = (name: string) => async () => {
    const text = await scrape();
    return samplesOf(text, name).length > 0 && text;
  };
  // Each scrape resets prom-client's histogram, and Node's then records from its second sample on
  // (the first only marks the time): a scrape with a sample comes two sampling periods after the last.
  const SAMPLE_MS = 1000;
  const idle = await until('a scrape with a loop-delay sample', sampled('edge_events_nodejs_eventloop_lag_p50_seconds'), 30_000, 2.5 * SAMPLE_MS);
  for (const stat of ['min', 'p50', 'mean']) {
    const [value] = samplesOf(idle, `edge_events_nodejs_eventloop_lag_${stat}_seconds`);
    t.ok(value >= 0 && value < 0.2, `idle ${stat}: ${value} s, not the 1 s sampling interval`);
  }

  // The store runs in this process, on this event loop: holding the loop here stalls the store's
  // HTTP thread for as long as the test says. A first hold longer than a sampling period makes
  // the histogram's sample come right after it; the second, of STALL_MS, then starts within the
  // period that sample began, so the next one is at least STALL_MS - SAMPLE_MS late.
  const hold = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) { /* the loop is held */ }
  };
  // One whole turn of the loop's timers, every timer due then run: a timeout of 0 runs in that
  // turn, possibly before the sampler's callback (its due time is taken from the loop's time at
  // the turn's start), an immediate after the turn.
  const timersTurn = async () => {
    await new Promise((resolve) => setTimeout(resolve, 0));
    await new Promise((resolve) => setImmediate(resolve));
  };
  const STALL_MS = 1300;
  await scrape();
  hold(SAMPLE_MS + 100);
  await timersTurn(); // the sampler's callback, due during the first hold, has run
  hold(STALL_MS);
  // The sampler's callback, due since, runs before the scrape, which would otherwise reset the
  // histogram first and lose the sample.
  await timersTurn();
  const stalled = await until('a scrape with the stall\'s sample', sampled('edge_events_nodejs_eventloop_lag_max_seconds'), 30_000, 2.5 * SAMPLE_MS);
  const [max] = samplesOf(stalled, 'edge_events_nodejs_eventloop_lag_max_seconds');
  const least = (STALL_MS - SAMPLE_MS) / 1000;
  t.ok(max >= least, `max ${max} s: at least ${least} s, the stall beyond the sampling period`);
  t.ok(max <= least + 0.5, `max ${max} s: the stall's, not the sampling period's`);
});
