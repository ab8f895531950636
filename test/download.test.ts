/**
 * GET /images/{id} and the other download routes: whole file and Range requests over real HTTP
 * (docs/API.md, "Routes"; RFC 9110, section 14), from pooled read buffers (file-download.ts).
 */
import http from 'node:http';
import t from 'tap';
import { BufferPool } from '../src/http/buffer-pool.js';
import { fixture, imageEvent, postJson, smallEvent } from './support/events.js';
import { postFile } from './support/multipart.js';
import { startStore } from './support/store-server.js';

t.test('Range requests', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const bytes = fixture('retina.jpg'); // 270 KB: more than one read chunk
  const { body } = await postJson(`${store.url}/v2/events`, imageEvent({}, 'retina.jpg'));
  const url = `${store.url}/images/${body.image_ids[0]}`;

  const whole = await fetch(url);
  t.equal(whole.status, 200);
  t.equal(whole.headers.get('accept-ranges'), 'bytes');
  t.equal(whole.headers.get('content-type'), 'image/jpeg');
  t.equal(whole.headers.get('content-length'), String(bytes.length));
  t.same(Buffer.from(await whole.arrayBuffer()), bytes);

  const cases: [string, number, number][] = [
    ['bytes=0-0', 0, 0],
    ['bytes=100-1099', 100, 1099],
    ['bytes=200000-', 200000, bytes.length - 1],
    ['bytes=-500', bytes.length - 500, bytes.length - 1],
    ['bytes=1000-99999999', 1000, bytes.length - 1],
    ['bytes=-99999999', 0, bytes.length - 1],
  ];
  for (const [range, start, end] of cases) {
    const res = await fetch(url, { headers: { range } });
    t.equal(res.status, 206, range);
    t.equal(res.headers.get('content-range'), `bytes ${start}-${end}/${bytes.length}`, `${range} Content-Range`);
    t.same(Buffer.from(await res.arrayBuffer()), bytes.subarray(start, end + 1), `${range} bytes`);
  }

  for (const range of [`bytes=${bytes.length}-`, 'bytes=500-100', 'bytes=-0']) {
    const res = await fetch(url, { headers: { range } });
    t.equal(res.status, 416, range);
    t.equal(res.headers.get('content-range'), `bytes */${bytes.length}`);
    await res.arrayBuffer();
  }
  const otherUnit = await fetch(url, { headers: { range: 'items=0-5' } });
  t.equal(otherUnit.status, 200, 'a Range of another unit is ignored');
  await otherUnit.arrayBuffer();
});

t.test('many concurrent downloads of a large image come back intact', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const bytes = fixture('retina.jpg');
  const { body } = await postJson(`${store.url}/v2/events`, imageEvent({}, 'retina.jpg'));
  const results = await Promise.all(Array.from({ length: 40 }, () => fetch(`${store.url}/images/${body.image_ids[0]}`).then(async (r) => Buffer.from(await r.arrayBuffer()))));
  t.ok(results.every((r) => r.equals(bytes)));
});

t.test('unknown, malformed and path-trick ids answer 404', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  for (const id of ['00000000-0000-0000-0000-000000000000', 'nope', '..%2F..%2Fdb%2Fdata.mdb', 'x'.repeat(3000)]) {
    const res = await fetch(`${store.url}/images/${id}`);
    t.equal(res.status, 404, id.slice(0, 40));
    t.same(await res.json(), { detail: `File ${decodeURIComponent(id)} not found` });
  }
});

t.test('a malformed percent escape in an id is a plain 404', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  for (const path of ['/images/%zz', '/v2/events/%E0%A4%A', '/videos/%']) {
    const res = await fetch(`${store.url}${path}`);
    t.equal(res.status, 404, path);
    await res.arrayBuffer();
  }
  t.equal((await fetch(`${store.url}/health`)).status, 200, 'the store still serves');
});

t.test('a buffer pool reuses what it was given back, up to its limit', async (t) => {
  const pool = new BufferPool(1024, 2);
  const [a, b, c] = [pool.acquire(), pool.acquire(), pool.acquire()];
  t.same([a.length, new Set([a, b, c]).size], [1024, 3], 'new buffers while none is free');
  for (const buffer of [a, b, c, a, Buffer.alloc(1024), a.subarray(0, 10)]) pool.release(buffer);
  t.equal(pool.freeCount, 2, 'kept up to the limit, a repeat release once');
  t.same(new Set([pool.acquire(), pool.acquire()]), new Set([a, b]));
  t.not(pool.acquire(), a, 'then new ones again');
});

/** GETs `url` with `headers` on its own connection; reads slowly, or hangs up after the first chunk. */
function download(url: string, headers: Record<string, string>, how: 'normal' | 'slow' | 'abort'): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        if (how === 'abort') {
          req.destroy();
          resolve(undefined);
        } else if (how === 'slow' && chunks.length % 8 === 1) {
          res.pause();
          setTimeout(() => res.resume(), 20);
        }
      });
      res.on('end', () => resolve(Buffer.concat(chunks)));
      res.on('error', () => resolve(undefined));
    });
    req.on('error', (err) => (how === 'abort' ? resolve(undefined) : reject(err)));
  });
}

t.test('pooled buffers: concurrent, slow and abandoned downloads of a multi-MiB file all get their own bytes', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  // Every byte says where it is, so a buffer reused too early shows as wrong bytes.
  const size = 12 * 1024 * 1024 + 12344; // not a whole number of read chunks
  const bytes = Buffer.alloc(size);
  for (let i = 0; i + 4 <= size; i += 4) bytes.writeUInt32BE(i, i);
  const draft = (await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }))).body.id;
  const file = await postFile(`${store.url}/v2/events/${draft}/local-only-files`, bytes, { content_type: 'application/octet-stream' });
  t.equal(file.status, 201);
  const url = `${store.url}/local-only-files/${file.body.file_id}`;

  const ranges: [number, number][] = [[0, size - 1], [1, 1], [1024 * 1024 - 3, 3 * 1024 * 1024 + 5], [size - 100, size - 1], [5_000_000, 9_999_999]];
  const runs: Promise<[string, Buffer | undefined, Buffer | undefined]>[] = [];
  for (let round = 0; round < 3; round++) {
    for (const [start, end] of ranges) {
      for (const how of ['normal', 'slow', 'abort'] as const) {
        const expected = how === 'abort' ? undefined : bytes.subarray(start, end + 1);
        runs.push(download(url, { range: `bytes=${start}-${end}` }, how).then((got) => [`${how} ${start}-${end}`, got, expected]));
      }
    }
  }
  runs.push(download(url, {}, 'slow').then((got) => ['slow whole file', got, bytes]));
  for (const [what, got, expected] of await Promise.all(runs)) {
    if (expected) t.ok(got?.equals(expected), `${what}: ${got?.length} bytes, right ones`);
  }
  const again = await download(url, { range: 'bytes=100-2000000' }, 'normal');
  t.ok(again?.equals(bytes.subarray(100, 2000001)), 'and after the aborts');
});
