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
