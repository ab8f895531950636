/** GET /images/{id}: whole file and Range requests over real HTTP (spec B, Download rules, E9). */
import t from 'tap';
import { fixture, imageEvent, postJson } from './support/events.js';
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
