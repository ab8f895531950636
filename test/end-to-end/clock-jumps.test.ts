/**
 * A wall clock that jumps (docs/STORAGE.md, "A clock that jumps"): a box
 * without a real-time clock boots at the time it last saved, and NTP then steps it. Real store
 * processes run under Debian's libfaketime (test/support/faketime.ts), whose offset the test moves
 * while they run or between two starts; the logic beneath (the created_at clock, the held-time
 * cutoff, retention, the re-stamp) is checked in-process with the clocks handed in.
 */
import t from 'tap';
import { launchStore, type StoreProcess } from '../../scripts/lib/store-process.js';
import { listEventsBody } from '../../src/events/read-events.js';
import { runCleanup } from '../../src/lifecycle/cleanup.js';
import { heldCutoff, runningAtCreation, runningMicros, type ClockEpoch } from '../../src/store/engine/store-clock.js';
import { restampAheadSync, type Restamped } from '../../src/store/engine/restamp.js';
import { readSinkCursor } from '../../src/store/ledger/sink-cursors.js';
import { unshipped } from '../../src/store/ledger/sink-ledger.js';
import { DAY_MICROS, formatMicros, parseIsoMicros, StampClock, type ClockJump } from '../../src/store/record/timestamps.js';
import { FakeClock } from '../support/faketime.js';
import { getJson, imageEvent, postJson, smallEvent } from '../support/events.js';
import { openLocalStore } from '../support/local-store.js';
import { tempDataDir } from '../support/store-server.js';
import { until } from '../support/waiting.js';
import { SseClient } from '../support/sse-client.js';
import { storeHandles } from '../../src/store/read/store-view.js';

const DAY_MS = 86_400_000;
const micros = (iso: string): number => parseIsoMicros(iso)!;

/** Starts a store process; scheduled cleanups are left to the test (`POST /admin/cleanup`). */
function launch(env: Record<string, string>): Promise<StoreProcess> {
  return launchStore({ CLEANUP_INTERVAL_SECONDS: '3600', HTTP_ENGINE: process.env.HTTP_ENGINE ?? '', ...env });
}

/** Creates `n` events one after the other; answers their 201 bodies. */
async function createEvents(url: string, n: number, overrides: Record<string, unknown> = {}): Promise<{ id: string; created_at: string }[]> {
  const created = [];
  for (let i = 0; i < n; i++) {
    const res = await postJson(`${url}/v2/events`, imageEvent({ deviceId: 'cam-clock', ...overrides }));
    if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
    created.push(res.body);
  }
  return created;
}

async function listAscending(url: string): Promise<{ id: string; created_at: string }[]> {
  const res = await getJson(`${url}/v2/events?device_id=cam-clock&sort_direction=asc&limit=100`);
  return res.body.events;
}

t.test('the created_at clock follows a jump forward and keeps its pace through a jump back', async (t) => {
  let wall = 1_000_000_000_000_000; // µs
  let mono = 5_000_000;
  const clock = new StampClock(() => wall, () => mono, wall - mono);
  const jumps: ClockJump[] = [];
  clock.onJump((jump) => jumps.push(jump));
  const step = (us: number) => {
    wall += us;
    mono += us;
  };
  step(1000);
  t.equal(clock.now(), wall, 'no jump: the wall clock');
  wall += 500_000; // a step under a second is left alone
  t.equal(clock.now(), wall - 500_000);
  t.same(jumps, [], 'and told to no one');

  wall += 30 * DAY_MICROS; // a clock 30 days behind, corrected
  t.equal(clock.now(), wall, 'created_at follows a jump forward');
  t.same(jumps.map((j) => [j.micros, j.followed]), [[30 * DAY_MICROS + 500_000, true]]);

  const before = clock.now();
  wall -= 365 * DAY_MICROS; // a clock a year ahead, corrected
  step(2000);
  t.equal(clock.now(), before + 2000, 'through a jump back created_at keeps its pace');
  t.same(jumps.map((j) => [j.micros, j.followed]).at(-1), [-365 * DAY_MICROS, false], 'told as not followed');
  t.equal(clock.ahead, 365 * DAY_MICROS, 'and runs a year ahead of the wall clock');
  wall += 365 * DAY_MICROS - 10_000_000; // set forward again, short of created_at's own
  t.equal(clock.now(), before + 2000, 'a jump forward short of created_at is not followed either');
  t.equal(clock.ahead, 10_000_000);
});

t.test('held time: an event counts as created at the running time of its epoch, never earlier', async (t) => {
  const epochs: ClockEpoch[] = [
    { from: 1_000, offset: 900, run: 0 }, // a start: created_at − running time = 900
    { from: 50_000, offset: 40_000, run: 10_000 }, // a jump forward of 39,100 followed
    { from: 60_000, offset: null, run: 15_000 }, // re-stamped events
    { from: 61_000, offset: 45_000, run: 15_000 }, // the start that re-stamped them
  ];
  const held = (running: number) => ({ running, epochs });
  t.equal(runningAtCreation(held(0), 999), -Infinity, 'before the first epoch: none (the wall clock alone judges)');
  t.equal(runningAtCreation(held(0), 1_900), 1_000);
  t.equal(runningAtCreation(held(0), 49_999), 10_000, 'capped by the next epoch');
  t.equal(runningAtCreation(held(0), 55_000), 15_000);
  t.equal(runningAtCreation(held(0), 60_500), 15_000, 're-stamped: created at the re-stamp');
  t.equal(runningAtCreation(held(0), 70_000), 25_000);

  t.equal(heldCutoff(held(100), 1_000), 1_000, 'not run long enough: only events before the epochs');
  t.equal(heldCutoff(held(2_000), 1_000), 1_901, 'within an epoch: running − retention + offset, exclusive');
  t.equal(heldCutoff(held(11_000), 1_000), 50_001, 'the first epoch whole, and the first created_at of the second');
  t.equal(heldCutoff(held(14_000), 1_000), 53_001, 'within the second epoch');
  t.equal(heldCutoff(held(16_000), 1_000), 61_000, 'the re-stamped events, once held for the retention after their re-stamp');
  t.equal(heldCutoff(held(30_000), 1_000), 74_001);
  t.equal(heldCutoff({ running: 0, epochs: [] }, 1_000), Infinity, 'no epochs (a store of an older release): no bound');
});

t.test('retention reckons by the store\'s running time too: events stamped 30 days back stay until the store ran 7 days', async (t) => {
  const dataDir = tempDataDir();
  const first = await openLocalStore({ DATA_DIR: dataDir, RETENTION_DAYS: '7' });
  for (let i = 0; i < 5; i++) await first.create(imageEvent());
  const ranBefore = runningMicros(first.store);
  await first.close();
  // The box's clock was 30 days behind when they were stamped: corrected, its now is 30 days later.
  const local = await openLocalStore({ DATA_DIR: dataDir, RETENTION_DAYS: '7' });
  t.teardown(local.close);
  t.ok(runningMicros(local.store) >= ranBefore, 'a restart continues the running time');
  t.ok(runningMicros(local.store) < ranBefore + 60e6, 'which counts no downtime');
  const corrected = Date.now() + 30 * DAY_MS;
  const now = await runCleanup(local.lifecycle, local.config, 'MANUAL', local.hooks, { now: corrected });
  t.equal(now.records_deleted.total, 0, 'held for seconds: none deleted, though 30 days old by the wall clock');
  const running = runningMicros(local.store);
  const almost = await runCleanup(local.lifecycle, local.config, 'MANUAL', local.hooks, { now: corrected + 7 * DAY_MS, running: running + 7 * DAY_MICROS - 60e6 });
  t.equal(almost.records_deleted.total, 0, 'a minute short of 7 days of running time: none');
  const after = await runCleanup(local.lifecycle, local.config, 'MANUAL', local.hooks, { now: corrected + 7 * DAY_MS, running: running + 7 * DAY_MICROS + 60e6 });
  t.equal(after.records_deleted.retention, 5, 'past 7 days by both clocks: all five');
  await local.store.clearAll();
  t.ok(runningMicros(local.store) >= running, 'a reset deletes the events, not the running time');
});

t.test('a re-stamp moves every entry naming an event\'s created_at, in order, in one transaction', async (t) => {
  // Handed the created_at of the first event as its `now`, the re-stamp finds the five after it
  // ahead of the wall clock, as a store whose clock was ahead and is corrected finds them.
  const local = await openLocalStore({ RETENTION_DAYS: '1000' }, ['cloud']);
  let closed = false;
  t.teardown(() => closed || local.close());
  const kept = await local.create(smallEvent({ device_id: 'cam-before' }));
  const created = [];
  for (let i = 0; i < 4; i++) created.push(await local.create(imageEvent({ deviceId: 'cam-restamp', customMetadata: { n: i } })));
  created.push(await local.create(smallEvent({ device_id: 'cam-restamp', draft: true })));
  const olds = created.map((c) => local.createdAt(c.id));
  await local.store.saveSinkCursor('mqtt', olds[2]);
  const now = local.createdAt(kept.id);
  const { dbs, stored } = local.store[storeHandles];
  let restamped: Restamped | undefined;
  await dbs.root.transaction(() => {
    restamped = restampAheadSync(stored, now, local.store.present);
  });
  t.same([restamped!.events, restamped!.after, restamped!.shift], [5, now, olds[4] - now], 'five moved, after the event at `now`');
  const news = created.map((c) => local.createdAt(c.id));
  t.same(news, [1, 2, 3, 4, 5].map((n) => now + n), 'in order, each a microsecond after the one before (none left room for their spacing)');
  t.equal(restamped!.newest, now + 5);
  t.equal(local.createdAt(kept.id), now, 'the event at `now` stays');
  t.notOk(olds.some((old) => stored.holds(old)), 'no record left at an old created_at');

  const record = local.store.getEvent(created[0].id)!;
  t.same([record.created_at, record.finalized_at], [news[0], news[0]], 'the record says its new created_at, and finalized_at with it');
  t.equal(micros(JSON.parse(local.store.getEventJson(created[0].id)!.toString()).created_at), news[0], 'its stored JSON too');
  const file = local.store.openFile(created[0].image_ids[0])!;
  t.equal(file.eventCreatedAt, news[0], 'its file names it by its new created_at');
  t.equal((await file.readAll()).length, file.size, 'and reads whole');

  const limits = { maxResponseBytes: 1e7, maxScanRecords: 1e4 };
  const list = async (params: Record<string, string>) => JSON.parse((await listEventsBody(local.store, new URLSearchParams(params), limits)).toString()).events.map((e: { id: string }) => e.id);
  t.same(await list({ device_id: 'cam-restamp', sort_direction: 'asc' }), created.map((c) => c.id), 'the device index lists them, in order');
  t.same(await list({ metadata_filter: 'n:2' }), [created[2].id], 'a metadata index finds one');
  t.same(await list({ start_time: formatMicros(now + 1), sort_direction: 'asc' }), created.map((c) => c.id), 'a time window after `now` finds the five');
  t.same(unshipped(local.store, 'cloud', 100).map((e) => e.createdAt), [now, ...news.slice(0, 4)], 'the finalized ones keep their place in the shipping ledger, by their new created_at');
  t.equal(readSinkCursor(local.store, 'mqtt'), news[2], 'a sink\'s created_at cursor names the same event');
  t.same(local.store.counters().events, 6, 'counters unchanged');

  closed = true;
  await local.close();
  const reopened = await openLocalStore({ DATA_DIR: local.dataDir, RETENTION_DAYS: '1000' }, ['cloud']);
  t.teardown(reopened.close);
  t.same([reopened.store.counters().events, reopened.createdAt(created[4].id)], [6, news[4]], 'a reopen replays nothing of the old stamps');
});

t.test('a real store under a clock 30 days behind, corrected by a restart: RETENTION_DAYS=7 deletes none of its events', async (t) => {
  const dataDir = tempDataDir();
  const clock = new FakeClock('-30d');
  const behind = await launch({ DATA_DIR: dataDir, RETENTION_DAYS: '7', ...clock.env() });
  t.teardown(() => behind.kill());
  const created = await createEvents(behind.url, 5);
  t.ok(micros(created[4].created_at) < Date.now() * 1000 - 29 * DAY_MICROS, 'stamped 30 days back');
  t.equal((await behind.kill('SIGTERM')).code, 0);

  const corrected = await launch({ DATA_DIR: dataDir, RETENTION_DAYS: '7' });
  t.teardown(() => corrected.kill());
  // The start-up cleanup is the one that deleted them all before.
  const stats = (await getJson(`${corrected.url}/stats`)).body;
  const cleanup = (await postJson(`${corrected.url}/admin/cleanup`, '')).body;
  t.equal(cleanup.records_deleted.total, 0, 'a cleanup deletes none');
  t.same((await listAscending(corrected.url)).map((e) => e.id), created.map((e) => e.id), 'all five are there, after the start-up cleanup too');
  t.equal(stats.next_cleanup_will_delete.records_past_retention, 0, '/stats predicts none');
  t.equal(stats.clock.jumps_forward, 1, 'the jump over the downtime is counted');
  t.equal(stats.clock.last_jump.found, 'downtime');
  t.ok(Math.abs(stats.clock.last_jump.seconds - 30 * 86_400) < 120, `and its size said: ${stats.clock.last_jump.seconds} s`);
  t.match(corrected.output(), /"msg":"the wall clock jumped/, 'and logged as a warning');
  const metrics = await (await fetch(`${corrected.url}/metrics`)).text();
  t.match(metrics, /edge_events_clock_jumps_total\{direction="forward"\} 1/, '/metrics counts it');
});

t.test('a real store under a clock a year ahead, corrected by a restart: later events are stamped with the corrected time', async (t) => {
  const dataDir = tempDataDir();
  const clock = new FakeClock('+365d');
  const ahead = await launch({ DATA_DIR: dataDir, ...clock.env() });
  t.teardown(() => ahead.kill());
  const created = await createEvents(ahead.url, 5);
  t.ok(micros(created[0].created_at) > Date.now() * 1000 + 364 * DAY_MICROS, 'stamped a year ahead');
  t.equal((await ahead.kill('SIGTERM')).code, 0);

  const corrected = await launch({ DATA_DIR: dataDir });
  t.teardown(() => corrected.kill());
  // A client of the live stream resumes after the last event it had, a year-ahead stamp.
  const stream = await SseClient.connect(`${corrected.url}/v2/events/stream?device_id=cam-clock`, { 'Last-Event-ID': created[4].created_at });
  t.teardown(() => stream.close());
  const before = Date.now() * 1000;
  const [fresh] = await createEvents(corrected.url, 1);
  const after = Date.now() * 1000;
  const at = micros(fresh.created_at);
  t.ok(at >= before - 1e6 && at <= after + 1e6, `stamped with the corrected time, within 1 s (${fresh.created_at})`);

  const listed = await listAscending(corrected.url);
  t.same(listed.map((e) => e.id), [...created.map((e) => e.id), fresh.id], 'the early five first, in their order, then the new one');
  t.ok(listed.slice(0, 5).every((e) => micros(e.created_at) < at), 're-stamped before it');
  for (const { id, created_at } of listed.slice(0, 5)) t.equal((await getJson(`${corrected.url}/v2/events/${id}`)).body.created_at, created_at, `${id} reads by id`);
  const lastHour = (await getJson(`${corrected.url}/v2/events?device_id=cam-clock&start_time=${new Date(Date.now() - 3_600_000).toISOString()}`)).body;
  t.equal(lastHour.events.length, 6, 'a time query for the last hour finds all six');
  const stats = (await getJson(`${corrected.url}/stats`)).body;
  t.same([stats.clock.jumps_backward, stats.clock.events_restamped, stats.clock.last_jump.found], [1, 5, 'start'], '/stats counts the jump and the re-stamp');
  t.ok(stats.clock.last_jump.seconds < -364 * 86_400, `of about a year back (${stats.clock.last_jump.seconds} s)`);
  t.match(corrected.output(), /"msg":"the wall clock jumped/, 'logged as a warning');
  let message = await stream.next();
  while (message.event !== 'created') message = await stream.next();
  t.equal(message.id, fresh.created_at, 'the live stream resumed from a year-ahead Last-Event-ID sends the new event');
});

/** `/stats` once it shows a jump: one found while running is recorded by an LMDB transaction of its own, after the create. */
const statsOnceJumpRecorded = (url: string) => until('the jump recorded', async () => {
  const { body } = await getJson(`${url}/stats`);
  return body.clock.last_jump && body;
});

t.test('a real store whose clock jumps while it runs', async (t) => {
  t.test('forward (30 days behind, corrected): created_at follows, and retention keeps what the store held for seconds', async (t) => {
    const clock = new FakeClock('-30d');
    const store = await launch({ DATA_DIR: tempDataDir(), RETENTION_DAYS: '7', ...clock.env() });
    t.teardown(() => store.kill());
    const early = await createEvents(store.url, 2);
    clock.set('+0');
    const before = Date.now() * 1000;
    const [late] = await createEvents(store.url, 1);
    t.ok(Math.abs(micros(late.created_at) - before) < 1e6, `the next event is stamped with the corrected time (${late.created_at})`);
    t.ok(micros(early[1].created_at) < before - 29 * DAY_MICROS, 'the early ones 30 days back');
    const stats = await statsOnceJumpRecorded(store.url);
    t.same([stats.clock.jumps_forward, stats.clock.last_jump.found], [1, 'running'], 'counted as found while running');
    t.equal((await postJson(`${store.url}/admin/cleanup`, '')).body.records_deleted.total, 0, 'RETENTION_DAYS=7: none deleted');
    t.equal((await listAscending(store.url)).length, 3);
  });

  t.test('back (a year ahead, corrected): created_at keeps its pace and order until the next start re-stamps', async (t) => {
    const clock = new FakeClock('+365d');
    const dataDir = tempDataDir();
    const store = await launch({ DATA_DIR: dataDir, ...clock.env() });
    t.teardown(() => store.kill());
    const early = await createEvents(store.url, 2);
    clock.set('+0');
    const [late] = await createEvents(store.url, 1);
    const gap = micros(late.created_at) - micros(early[1].created_at);
    t.ok(gap > 0 && gap < 60e6, `stamped after the early ones, at the time since them (${gap} µs), not a microsecond after`);
    const stats = await statsOnceJumpRecorded(store.url);
    t.same([stats.clock.jumps_backward, stats.clock.last_jump.found], [1, 'running']);
    t.ok(stats.clock.created_at_ahead_seconds > 364 * 86_400, 'created_at runs a year ahead, said');
    t.equal((await store.kill('SIGTERM')).code, 0);
    const restarted = await launch({ DATA_DIR: dataDir });
    t.teardown(() => restarted.kill());
    const before = Date.now() * 1000;
    const [fresh] = await createEvents(restarted.url, 1);
    t.ok(Math.abs(micros(fresh.created_at) - before) < 1e6, 'the next start stamps with the wall clock');
    t.same((await listAscending(restarted.url)).map((e) => e.id), [...early, late, fresh].map((e) => e.id), 'in order');
  });
});
