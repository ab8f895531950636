/**
 * Defects found by the reliability harness (docs/RELIABILITY.md), each as a minimal reproduction.
 * They fail until the code is fixed; then they keep the fix.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runCleanup } from '../src/lifecycle/cleanup.js';
import { SEGMENT_ROLL_BYTES, segmentFileName } from '../src/store/blob-log.js';
import { DiskReserve } from '../src/store/disk-reserve.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { rawRequest } from '../scripts/lib/raw-http.js';
import { spawnStore } from '../scripts/lib/spawned-store.js';
import { clockPast, openLocalStore } from './support/local-store.js';
import { startStore, tempDataDir } from './support/store-server.js';
import { until } from './support/waiting.js';

// A valid external_id (up to 1000 characters; docs/API.md, "Event schemas") of 700 '€' is 2100
// bytes in UTF-8: its index key [x, value, created_at] exceeds LMDB's 1978-byte key limit.
const LONG_EXTERNAL_ID = '€'.repeat(700);

t.test('a valid event whose indexed value is over 1978 bytes is stored (found by the fuzz run)', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  for (const [what, event] of [
    ['external_id of 700 €', smallEvent({ event_schema: 'custom', event_data: { external_id: LONG_EXTERNAL_ID } })],
    ['custom_metadata value of 1000 €', smallEvent({ custom_metadata: { note: '€'.repeat(1000) } })],
    ['related_event_id of 1000 emoji', smallEvent({ event_schema: 'operator_feedback', event_data: { related_event_id: '\u{1F600}'.repeat(1000), feedback: 'correct' } })],
  ] as const) {
    const created = await postJson(`${store.url}/v2/events`, event);
    t.equal(created.status, 201, `${what}: ${JSON.stringify(created.body)}`);
  }
  const found = await getJson(`${store.url}/v2/events?external_id=${encodeURIComponent(LONG_EXTERNAL_ID)}`);
  t.equal(found.status, 200);
  t.equal(found.body.count, 1, 'and found by its external_id');
});

t.test('one such event does not fail the creates group-committed with it', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const neighbours = Array.from({ length: 20 }, () => postJson(`${store.url}/v2/events`, imageEvent()));
  const long = postJson(`${store.url}/v2/events`, smallEvent({ event_schema: 'custom', event_data: { external_id: LONG_EXTERNAL_ID } }));
  const statuses = (await Promise.all(neighbours)).map((r) => r.status);
  await long;
  t.same(statuses, statuses.map(() => 201), 'every ordinary create sent with it is acknowledged');
  t.ok((await getJson(`${store.url}/stats`)).body.current.total_events >= 20, 'and stored');
});

t.test('a filter value longer than an LMDB key answers like any other filter, never 500', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const long = 'x'.repeat(2000);
  await postJson(`${store.url}/v2/events`, smallEvent({ custom_metadata: { line: 'A' } }));
  for (const query of [`/v2/events?device_id=${long}`, `/v2/events?external_id=${long}`, `/v2/events?metadata_filter=${long}:1`,
    `/v2/events?metadata_filter=line:${long}`]) {
    const res = await getJson(`${store.url}${query}`);
    t.same([res.status, res.body.count], [200, 0], `${query.slice(0, 40)}...: nothing matches`);
  }
  for (const query of [`/events/count/stats?device_id=${long}`, `/events/count/stats?workflow_id=${long}`]) {
    const res = await getJson(`${store.url}${query}`);
    t.same([res.status, res.body.total_count, res.body.filtered_count], [200, 1, 0], `${query.slice(0, 40)}...: nothing matches`);
  }
});

t.test('a client hanging up in the middle of a JSON body does not hold up a graceful stop', { timeout: 30_000 }, async (t) => {
  const store = await startStore();
  const port = Number(new URL(store.url).port);
  await rawRequest(port, ['POST /v2/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"inference_'], { abort: true });
  t.equal((await getJson(`${store.url}/health`)).status, 200);
  // The abandoned request can never finish: a stop that waits for it waits its whole grace
  // period (10 minutes here, so a defect shows as this subtest's 30 s timeout, not as a figure).
  await store.service.stop(600_000);
  t.pass('the graceful stop did not wait for the abandoned request');
});

t.test('metadata_filter on keys named like Object.prototype members answers 200, never 500 (found by the fuzz run)', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  await postJson(`${store.url}/v2/events`, smallEvent({ custom_metadata: { line: 'A' } }));
  for (const filter of ['toString:ne:x', 'constructor:gt:1', 'hasOwnProperty:ne:1', 'valueOf:lt:5', '__proto__:ne:x', 'toString:x']) {
    const res = await getJson(`${store.url}/v2/events?metadata_filter=${encodeURIComponent(filter)}`);
    t.same([res.status, res.body.count], [200, 0], `${filter}: the event has no such key`);
  }
});

t.test('a custom_metadata key "__proto__" is refused with 422 naming it, and nothing is stored (found by the fuzz run)', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const body = '{"inference_timestamp":"2026-11-22T01:00:00Z","event_schema":"custom","event_data":{},"custom_metadata":{"__proto__":"x","line":"A"}}';
  const created = await postJson(`${store.url}/v2/events`, body);
  t.equal(created.status, 422);
  t.same(created.body.detail.map((d: { loc: unknown[] }) => d.loc), [['body', 'custom_metadata', '__proto__']], 'the key is named');
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, 0, 'nothing stored');
});

t.test('an upload whose staging file fails mid-stream answers an error, never hangs (found by disk-full)', async (t) => {
  // On a full disk the staging write fails with ENOSPC; here it fails because staging/ is not a
  // directory. Either way the write stream errors and never drains: the upload used to hang.
  const store = await startStore();
  t.teardown(store.stop);
  const draft = (await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }))).body;
  fs.rmSync(path.join(store.dataDir, 'staging'), { recursive: true });
  fs.writeFileSync(path.join(store.dataDir, 'staging'), 'not a directory');
  const form = new FormData();
  form.append('file', new Blob([Uint8Array.from(Buffer.concat([fixture('cat-zoom.mp4'), Buffer.alloc(3_000_000, 1)]))]), 'clip.mp4');
  // The deadline only tells a hang from an answer (an answer comes in milliseconds).
  const res = await fetch(`${store.url}/v2/events/${draft.id}/videos`, { method: 'POST', body: form, signal: AbortSignal.timeout(20_000) })
    .catch((err: Error) => err);
  t.ok(!(res instanceof Error), `answered (${res instanceof Error ? res.name : res.status})`);
  if (!(res instanceof Error)) t.ok(res.status >= 500, `with a server error: ${res.status} ${await res.text()}`);
});

t.test('cleanup gives the bytes of deleted files back to the disk, the active segment too (found by disk-full)', async (t) => {
  // On a 64 MiB disk every blob sits in the active segment (segments roll at 64 MiB), which
  // reclaimSegments never deletes: a cleanup that deleted every event with a file freed no space
  // at all. Here the lifecycle worker deletes them as over MAX_RECORDS, so it asks the HTTP
  // thread to retire the active segment by message, as in production.
  const store = await startStore({ MAX_RECORDS: '1' });
  t.teardown(store.stop);
  for (let i = 0; i < 3; i++) t.equal((await postJson(`${store.url}/v2/events`, imageEvent({}, 'retina.jpg'))).status, 201);
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 201, 'the newest event has no file');
  // A crossed limit may start a cleanup on its own; the worker runs its jobs one at a time, so
  // once this one answers, every cleanup the creates caused has run.
  const cleanup = (await postJson(`${store.url}/admin/cleanup`, '')).body;
  t.same([cleanup.after.records, cleanup.after.files], [1, 0], 'every event with a file deleted');
  const blobsDir = path.join(store.dataDir, 'blobs');
  const onDisk = fs.readdirSync(blobsDir).reduce((sum, name) => sum + fs.statSync(path.join(blobsDir, name)).size, 0);
  t.ok(onDisk < fixture('retina.jpg').length, `blobs/ holds ${onDisk} bytes after deleting 3 x ${fixture('retina.jpg').length}`);
});

t.test('with cloud upload off, creates at the record cap are never refused with 529 (found by the soak)', async (t) => {
  // E10: 529 means over a limit and waiting for uploads to drain. With cloud upload off nothing
  // waits for uploads: cleanup can always delete. The gate closed whenever ingest crossed the
  // cap again while a cleanup ran (1770 of 3000 creates answered 529 in the reproduction).
  const store = await startStore({ MAX_RECORDS: '50' });
  t.teardown(store.stop);
  const statuses = new Map<number, number>();
  let sent = 0;
  await Promise.all(Array.from({ length: 10 }, async () => {
    while (sent < 2000) {
      sent++;
      const { status } = await postJson(`${store.url}/v2/events`, smallEvent());
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  }));
  t.same([...statuses], [[201, 2000]], 'every create acknowledged');
});

t.test('an upload whose staging file cannot be removed never brings the store down (found by disk-full)', async (t) => {
  // The multipart bridge discards a refused upload's staging file with
  // `void Promise.resolve(staging.discard()).finally(...)`: a discard that fails (here ENOTDIR,
  // on a device EIO or EACCES) became an unhandled rejection, which ends a Node process.
  const dataDir = tempDataDir();
  const store = await spawnStore({ PORT: '0', DATA_DIR: dataDir });
  t.teardown(() => void store.child.kill('SIGKILL'));
  const draft = (await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }))).body;
  fs.rmSync(path.join(dataDir, 'staging'), { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'staging'), 'not a directory');
  const form = new FormData();
  form.append('file', new Blob([Uint8Array.from(Buffer.concat([fixture('cat-zoom.mp4'), Buffer.alloc(3_000_000, 1)]))]), 'clip.mp4');
  await fetch(`${store.url}/v2/events/${draft.id}/videos`, { method: 'POST', body: form, signal: AbortSignal.timeout(20_000) })
    .then((res) => res.arrayBuffer(), () => undefined);
  const health = await fetch(`${store.url}/health`).then((res) => res.status, (err: Error) => err.message);
  t.equal(health, 200, `the store still answers (exit code ${store.child.exitCode})`);
});

t.test('after a power cut, a lock file naming a pid now used by another process does not stop the store (found by crash-loop review)', async (t) => {
  // DATA_DIR/store.lock holds the pid of the store that took it. After a power cut the machine
  // reboots and that pid is handed to some other process (pids restart at boot; the store may
  // even get its own old pid back). lockDataDir takes a live pid for a live store and refuses to
  // start, so systemd restarts it in vain and the device stores nothing until someone deletes
  // the lock by hand.
  const dataDir = tempDataDir();
  fs.writeFileSync(path.join(dataDir, 'store.lock'), String(process.pid)); // a live process that is no store
  const store = await spawnStore({ PORT: '0', DATA_DIR: dataDir }).catch((err: Error) => err);
  if (store instanceof Error) return t.fail(`the store refused to start: ${store.message.slice(0, 300)}`);
  t.teardown(() => void store.child.kill('SIGKILL'));
  t.equal((await getJson(`${store.url}/health`)).status, 200, 'it starts and serves');
});

t.test('an old segment whose live share fell low is compacted, giving its space back (found by disk-full)', async (t) => {
  // docs/STORAGE.md, "Reclaiming space": an old segment whose live share falls under a quarter is
  // compacted. Before the fix nothing compacted: on a full disk, a retention cleanup that deleted
  // most of a segment freed no space. The first segment is filled with old events up to just
  // under SEGMENT_ROLL_BYTES, so the first survivor is appended to it and keeps it alive.
  // runCleanup is handed `now`: the old events are made a day old by moving it, not by waiting.
  const local = await openLocalStore({ RETENTION_DAYS: '1' });
  t.teardown(local.close);
  const image = fixture('retina.jpg'); // 269,564 bytes: about 248 events fill a 64 MiB segment
  const body = imageEvent({}, 'retina.jpg');
  const segmentOf = (imageId: string) => local.store.getFile(imageId)!.segment;
  const first = await local.create(body);
  const old = [first.id];
  const segment = segmentOf(first.image_ids[0]);
  const firstSegment = path.join(local.dataDir, 'blobs', segmentFileName(segment));
  const perEvent = fs.statSync(firstSegment).size; // an append is durable, so on disk, before its 201
  // Sixteen at a time (group-committed together), then one at a time up to the last that fits.
  for (const group of [16, 1]) {
    while (fs.statSync(firstSegment).size + group * perEvent < SEGMENT_ROLL_BYTES) {
      old.push(...(await Promise.all(Array.from({ length: group }, () => local.create(body)))).map((c) => c.id));
    }
  }
  const boundaryMs = Math.floor(Math.max(...old.map((id) => local.createdAt(id))) / 1000) + 1;
  clockPast(boundaryMs * 1000); // `now` is whole milliseconds: the survivors go into a later one
  const survivors = [];
  for (let i = 0; i < 6; i++) survivors.push(await local.create(body));
  const next = segment + 1;
  t.same([...new Set(old.map((id) => segmentOf(local.store.getEvent(id)!.images[0].file_id!)))], [segment], `the ${old.length} old events fill the first segment`);
  t.same(survivors.map((s) => segmentOf(s.image_ids[0])), [segment, next, next, next, next, next], 'the first survivor is its last append');

  const cleanup = await runCleanup(local.store, local.config, 'MANUAL', local.hooks, boundaryMs + 86_400_000);
  t.equal(cleanup.records_deleted.total, old.length, 'the old events deleted; the first segment keeps one live image');
  t.not(segmentOf(survivors[0].image_ids[0]), segment, 'that image was copied forward');
  t.notOk(fs.existsSync(firstSegment), 'and the first segment deleted');
  const blobsDir = path.join(local.dataDir, 'blobs');
  const onDisk = fs.readdirSync(blobsDir).reduce((sum, name) => sum + fs.statSync(path.join(blobsDir, name)).size, 0);
  t.ok(onDisk < 20 * image.length, `blobs/ holds ${(onDisk / 2 ** 20).toFixed(1)} MiB for ${survivors.length} live images of ${image.length} bytes`);
  let intact = 0;
  for (const { image_ids } of survivors) {
    const file = local.store.getFile(image_ids[0])!;
    const bytes = Buffer.alloc(file.length);
    await local.store.blobs.read(file.segment, file.offset, bytes);
    if (bytes.equals(image)) intact++;
  }
  t.equal(intact, 6, 'every surviving image keeps its bytes');
});

t.test('on a disk filled to the last byte, cleanup gives the disk reserve back and then commits (found by disk-full)', async (t) => {
  // LMDB writes new pages before it frees old ones: with no free byte, the deletions of a
  // retention cleanup failed to commit (500) and only a reset gave service back.
  const dataDir = tempDataDir();
  const MiB = 1024 * 1024;
  let free = 100 * MiB;
  const reserve = new DiskReserve(dataDir, 8 * MiB, async () => free);
  t.equal(await reserve.take(), true, 'taken with room to spare');
  t.equal(fs.statSync(reserve.file).size, 8 * MiB);
  free = 16 * MiB;
  t.equal(await reserve.releaseIfLow(), false, 'kept while its size is still free');
  free = 0;
  t.equal(await reserve.releaseIfLow(), true, 'given back on a full disk');
  t.notOk(fs.existsSync(reserve.file));
  free = 12 * MiB;
  t.equal(await reserve.take(), false, 'not taken again until twice its size is free');
  t.notOk(fs.existsSync(reserve.file));
  t.notOk(fs.existsSync(`${reserve.file}.tmp`), 'nothing half-written');
  free = 16 * MiB;
  t.equal(await reserve.take(), true);

  // The running store holds its reserve (DISK_RESERVE_BYTES, default 8 MiB) once its first
  // cleanup has run; `npm run disk-full` (as root) shows the cleanup on a full tmpfs.
  const store = await startStore();
  t.teardown(store.stop);
  const file = path.join(store.dataDir, 'disk-reserve');
  await until('the worker took its disk reserve', () => fs.existsSync(file));
  t.equal(fs.statSync(file).size, 8 * MiB, 'DATA_DIR/disk-reserve holds 8 MiB');
});
