/**
 * Drafts, streamed attachments and finalize over real HTTP with real media (docs/API.md, "Drafts
 * and attachments", "Downloads"; E8, E9).
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { responseProblems } from './support/response-shapes.js';
import { fixture, getJson, postJson, smallEvent } from './support/events.js';
import { abortedUpload, postFile, postRaw } from './support/multipart.js';
import { rawRequest } from '../scripts/lib/raw-http.js';
import { spawnStore } from '../scripts/lib/spawned-store.js';
import { startStore, tempDataDir, type TestStore } from './support/store-server.js';
import { until } from './support/waiting.js';

async function draft(store: TestStore): Promise<string> {
  const res = await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }));
  if (res.status !== 201 || res.body.draft !== true) throw new Error(`draft not created: ${JSON.stringify(res.body)}`);
  return res.body.id;
}

const stagingFiles = (store: TestStore) => fs.readdirSync(path.join(store.dataDir, 'staging'));
const segmentFiles = (store: TestStore) => fs.readdirSync(path.join(store.dataDir, 'blobs'));
/**
 * Segments holding an upload: their first frame is a video or local-only file (kind 2 or 3,
 * docs/STORAGE.md); the log's own segments start with an image or a record and may be retired
 * by cleanup at any time.
 */
const uploadSegments = (store: TestStore) => segmentFiles(store).filter((name) => {
  const header = Buffer.alloc(5);
  const fd = fs.openSync(path.join(store.dataDir, 'blobs', name), 'r');
  fs.readSync(fd, header, 0, 5, 0);
  fs.closeSync(fd);
  return header[4] === 2 || header[4] === 3;
});

t.test('videos of every container are attached, listed and downloadable with Range', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const id = await draft(store);
  const videos: [string, string][] = [['cat-zoom.mp4', 'video/mp4'], ['testsrc.mov', 'video/quicktime'], ['testsrc.mkv', 'video/matroska']];
  const fileIds: string[] = [];
  for (const [name, type] of videos) {
    const res = await postFile(`${store.url}/v2/events/${id}/videos`, fixture(name), { label: name }, 'application/octet-stream');
    t.equal(res.status, 201, name);
    t.same(responseProblems('attach-response', res.body), [], `${name} response shape`);
    t.equal(res.body.content_type, type, `${name} sniffed from the bytes`);
    t.equal(res.body.size_bytes, fixture(name).length);
    t.equal(res.body.event_id, id);
    fileIds.push(res.body.file_id);
  }
  const event = (await getJson(`${store.url}/v2/events/${id}`)).body;
  t.same(event.videos.map((v: any) => v.file_id), fileIds);
  t.same(event.videos.map((v: any) => v.label), videos.map(([name]) => name));
  t.equal(event.original_file_count, 3);
  t.equal(event.current_file_count, 3);
  t.equal(event.draft, true);
  t.equal(event.finalized_at, null);

  const mp4 = fixture('cat-zoom.mp4');
  const whole = await fetch(`${store.url}/videos/${fileIds[0]}`);
  t.equal(whole.headers.get('content-type'), 'video/mp4');
  t.same(Buffer.from(await whole.arrayBuffer()), mp4);
  const part = await fetch(`${store.url}/videos/${fileIds[0]}`, { headers: { range: 'bytes=-1000' } });
  t.equal(part.status, 206);
  t.same(Buffer.from(await part.arrayBuffer()), mp4.subarray(mp4.length - 1000));
  t.equal((await fetch(`${store.url}/local-only-files/${fileIds[0]}`)).status, 404, 'a video is not a local-only file (attachment rule 5)');
  t.same(stagingFiles(store), [], 'staging is empty');
});

t.test('a multi-MB upload streams through', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const id = await draft(store);
  const big = Buffer.concat([fixture('cat-zoom.mp4'), Buffer.alloc(24 * 1024 * 1024, 0x5a)]);
  const res = await postFile(`${store.url}/v2/events/${id}/videos`, big);
  t.equal(res.status, 201);
  t.equal(res.body.size_bytes, big.length);
  const back = Buffer.from(await (await fetch(`${store.url}/videos/${res.body.file_id}`)).arrayBuffer());
  t.ok(back.equals(big), 'the bytes come back identical');
});

t.test('a non-video disguised as video/mp4 answers 415 and stores nothing', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const id = await draft(store);
  for (const name of ['cat.jpg', 'README-like.txt']) {
    const bytes = name.endsWith('.jpg') ? fixture(name) : Buffer.from('just some text pretending to be a video\n'.repeat(200));
    const res = await postFile(`${store.url}/v2/events/${id}/videos`, bytes, {}, 'video/mp4');
    t.equal(res.status, 415, name);
  }
  const event = (await getJson(`${store.url}/v2/events/${id}`)).body;
  t.same(event.videos, []);
  t.equal(event.original_file_count, 0);
  t.same(uploadSegments(store), [], 'no upload segment written');
  t.same(stagingFiles(store), []);
});

t.test('local-only files: declared type kept, else sniffed, else octet-stream', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const id = await draft(store);
  const url = `${store.url}/v2/events/${id}/local-only-files`;
  const declared = await postFile(url, Buffer.from('a,b\n1,2\n'), { content_type: 'text/csv', label: 'counts' }, 'text/plain');
  t.equal(declared.status, 201);
  t.same([declared.body.content_type, declared.body.label], ['text/csv', 'counts']);
  const sniffed = await postFile(url, fixture('rocket.jpg'), {}, 'application/octet-stream');
  t.same([sniffed.body.content_type, sniffed.body.label], ['image/jpeg', 'file']);
  const unknown = await postFile(url, Buffer.from('plain words'), {}, 'text/plain');
  t.equal(unknown.body.content_type, 'application/octet-stream');

  const event = (await getJson(`${store.url}/v2/events/${id}`)).body;
  t.same(event.local_only_files.map((f: any) => f.file_id), [declared.body.file_id, sniffed.body.file_id, unknown.body.file_id]);
  const csv = await fetch(`${store.url}/local-only-files/${declared.body.file_id}`);
  t.equal(csv.headers.get('content-type'), 'text/csv');
  t.equal(await csv.text(), 'a,b\n1,2\n');
  t.equal((await fetch(`${store.url}/videos/${declared.body.file_id}`)).status, 404, 'not a video (attachment rule 5)');
  t.equal((await fetch(`${store.url}/images/${declared.body.file_id}`)).status, 404);
});

t.test('bad multipart requests: 400, 422, 413, and nothing stored', async (t) => {
  const store = await startStore({ MAX_VIDEO_UPLOAD_BYTES: '200000', MAX_LOCAL_ONLY_FILE_UPLOAD_BYTES: '1000' });
  t.teardown(store.stop);
  const id = await draft(store);
  const videos = `${store.url}/v2/events/${id}/videos`;
  const files = `${store.url}/v2/events/${id}/local-only-files`;
  const boundary = 'b0undary';
  const part = (name: string, body: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="x.mp4"\r\nContent-Type: video/mp4\r\n\r\n${body}\r\n`;

  t.equal((await postFile(videos, null, { label: 'x' })).status, 400, 'missing file part');
  t.equal((await postFile(videos, Buffer.alloc(0))).status, 400, 'empty file part');
  t.equal((await postRaw(videos, `${part('file', 'aaa')}${part('file', 'bbb')}--${boundary}--\r\n`, `multipart/form-data; boundary=${boundary}`)).status, 400, 'two file parts');
  t.equal((await postRaw(videos, `${part('file', 'aaa')}`, `multipart/form-data; boundary=${boundary}`)).status, 400, 'truncated body');
  t.equal((await postRaw(videos, 'hello', 'multipart/form-data; boundary=other')).status, 400, 'wrong boundary');
  t.equal((await postRaw(videos, '{}', 'application/json')).status, 400, 'not multipart');
  t.equal((await postFile(videos, fixture('cat-zoom.mp4'), { label: '' })).status, 422, 'empty label');
  t.equal((await postFile(videos, fixture('cat-zoom.mp4'), { label: 'x'.repeat(300) })).status, 422, 'label too long');
  t.equal((await postFile(files, Buffer.from('x'), { content_type: 'not a mime type' })).status, 422, 'invalid content_type');
  t.equal((await postFile(files, Buffer.alloc(1001, 1))).status, 413, 'local-only file over its limit');
  // A raw socket reads the answer whatever the server does with the rest of the body (fetch may
  // fail writing it instead, and hide the 413).
  const video = Buffer.concat([fixture('cat-zoom.mp4'), Buffer.alloc(200000)]);
  const body = [Buffer.from(part('file', '').split('\r\n\r\n')[0] + '\r\n\r\n'), video, Buffer.from(`\r\n--${boundary}--\r\n`)];
  const length = body.reduce((sum, b) => sum + b.length, 0);
  const chunks: Buffer[] = [];
  for (const b of body) for (let i = 0; i < b.length; i += 16384) chunks.push(b.subarray(i, i + 16384));
  const tooBig = await rawRequest(Number(new URL(store.url).port), [
    `POST ${new URL(videos).pathname} HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${length}\r\n\r\n`,
    ...chunks,
  ]);
  t.equal(tooBig !== 'closed' && tooBig.status, 413, 'oversized video: 413');

  const event = (await getJson(`${store.url}/v2/events/${id}`)).body;
  t.same([event.videos, event.local_only_files, event.original_file_count], [[], [], 0]);
  t.same(stagingFiles(store), [], 'staging removed at once');
  t.same(uploadSegments(store), [], 'no upload segment kept');
});

t.test('state is checked before the body: 404 absent, 409 finalized (E8)', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const missing = await postFile(`${store.url}/v2/events/00000000-0000-4000-8000-000000000000/videos`, fixture('cat-zoom.mp4'));
  t.equal(missing.status, 404);
  const finalized = await postJson(`${store.url}/v2/events`, smallEvent());
  const refused = await postFile(`${store.url}/v2/events/${finalized.body.id}/videos`, fixture('cat-zoom.mp4'));
  t.equal(refused.status, 409);
  const refusedFile = await postFile(`${store.url}/v2/events/${finalized.body.id}/local-only-files`, Buffer.from('x'));
  t.equal(refusedFile.status, 409);
  t.same(uploadSegments(store), [], 'no upload segment kept');
});

t.test('finalize: sets finalized_at, repeats report already_finalized, 404 when absent', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const id = await draft(store);
  const hidden = await getJson(`${store.url}/v2/events?include_drafts=false`);
  t.same(hidden.body.events, [], 'drafts hidden with include_drafts=false');
  const first = await postJson(`${store.url}/v2/events/${id}/finalize`, '');
  t.equal(first.status, 200);
  t.same(responseProblems('finalize-response', first.body), []);
  t.equal(first.body.already_finalized, false);
  t.equal(first.body.auto_finalized_at, null);
  const again = await postJson(`${store.url}/v2/events/${id}/finalize`, '');
  t.equal(again.body.already_finalized, true);
  t.equal(again.body.finalized_at, first.body.finalized_at, 'same finalized_at');
  const event = (await getJson(`${store.url}/v2/events/${id}`)).body;
  t.same([event.draft, event.finalized_at], [false, first.body.finalized_at]);
  t.same((await getJson(`${store.url}/v2/events?include_drafts=false`)).body.events.map((e: any) => e.id), [id]);
  t.equal((await postJson(`${store.url}/v2/events/nope/finalize`, '')).status, 404);
});

t.test('a client that disconnects mid-upload leaves no staging file and no attachment', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const id = await draft(store);
  await abortedUpload(store.url, `/v2/events/${id}/videos`, fixture('cat-zoom.mp4'), 3 * 1024 * 1024, () => stagingFiles(store).length > 0);
  await until('the staging file removed', () => stagingFiles(store).length === 0);
  t.same(stagingFiles(store), [], 'staging file removed');
  const event = (await getJson(`${store.url}/v2/events/${id}`)).body;
  t.same(event.videos, []);
  t.same(uploadSegments(store), [], 'no upload segment kept');
  const ok = await postFile(`${store.url}/v2/events/${id}/videos`, fixture('testsrc.mov'));
  t.equal(ok.status, 201, 'the store still takes uploads');
});

t.test('an event finalized while its upload streams keeps nothing (409)', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const id = await draft(store);
  const bytes = Buffer.concat([fixture('cat-zoom.mp4'), Buffer.alloc(32 * 1024 * 1024, 1)]);
  let pulls = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      pulls++;
      if (pulls === 1) {
        controller.enqueue(new TextEncoder().encode('--bnd\r\nContent-Disposition: form-data; name="file"; filename="a.mp4"\r\n\r\n'));
        controller.enqueue(bytes.subarray(0, 1024 * 1024));
        return;
      }
      // The upload is under way (its staging file exists): finalize the event now.
      await until('the upload under way (its staging file exists)', () => stagingFiles(store).length > 0, 30_000, 5);
      t.equal((await postJson(`${store.url}/v2/events/${id}/finalize`, '')).status, 200, 'finalized mid-upload');
      controller.enqueue(bytes.subarray(1024 * 1024));
      controller.enqueue(new TextEncoder().encode('\r\n--bnd--\r\n'));
      controller.close();
    },
  });
  const res = await fetch(`${store.url}/v2/events/${id}/videos`, {
    method: 'POST', body, headers: { 'content-type': 'multipart/form-data; boundary=bnd' }, duplex: 'half',
  } as RequestInit);
  t.equal(res.status, 409);
  await res.arrayBuffer();
  const event = (await getJson(`${store.url}/v2/events/${id}`)).body;
  t.same(event.videos, []);
  t.same(uploadSegments(store), [], 'no upload segment kept');
  t.same(stagingFiles(store), []);
});

// Found by the disk-full harness (npm run disk-full; docs/RELIABILITY.md), commit 1320af0.
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
  t.notOk(res instanceof Error, `answered (${res instanceof Error ? res.name : res.status})`);
  // docs/RELIABILITY.md, "Defects found by the harness": 507 for ENOSPC, 500 for any other
  // failure; a staging/ that is no directory fails with ENOTDIR, so 500 (store_failure).
  const answer = res instanceof Error ? { status: 0, body: res.message } : { status: res.status, body: await res.text() };
  t.equal(answer.status, 500, `with a server error: ${answer.body}`);
});

// Found by the disk-full harness (npm run disk-full; docs/RELIABILITY.md), commit 2de7920.
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
