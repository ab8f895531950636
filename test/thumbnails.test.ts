/**
 * Thumbnails of stored images (docs/API.md, "Thumbnails"; #27 item 10): over real HTTP with the
 * real fixture photos, `GET /images/{image_id}/thumbnail` answers a WebP that sharp decodes, its
 * longest side at most 256 px and its proportions kept, far fewer bytes than the photo, with the
 * photo's own size in X-Source-Width/Height; a missing image answers the download's 404; bytes
 * that are no image 422. Then the bounds of src/events/thumbnails.ts on a store opened in
 * process: one resize at a time, one resize per image however many ask, the cache held to its bytes.
 */
import sharp from 'sharp';
import t from 'tap';
import { Thumbnails, THUMBNAIL_LONGEST_SIDE } from '../src/events/thumbnails.js';
import { fixture, getJson, postJson, smallEvent } from './support/events.js';
import { openLocalStore } from './support/local-store.js';
import { postFile } from './support/multipart.js';
import { startStore } from './support/store-server.js';

/** The fixture photos and their sizes (test/fixtures; /work/shared/fixtures/README.md). */
const PHOTOS: [string, number, number][] = [['retina.jpg', 1411, 1411], ['rocket.jpg', 640, 427], ['camera.jpg', 512, 512], ['cat.jpg', 451, 300]];

const imageEntry = (name: string) => ({ label: name, base64Image: fixture(name).toString('base64') });

t.test('GET /images/{image_id}/thumbnail: a small WebP of the photo, over real HTTP', async (t) => {
  const store = await startStore({ API_KEY: 'thumb-key' });
  t.teardown(store.stop);
  const auth = { 'X-API-Key': 'thumb-key' };
  const created = await postJson(`${store.url}/v2/events`, { ...smallEvent(), images: PHOTOS.map(([name]) => imageEntry(name)) }, auth);
  t.equal(created.status, 201);
  const ids = created.body.image_ids as string[];

  for (const [index, [name, width, height]] of PHOTOS.entries()) {
    const answer = await fetch(`${store.url}/images/${ids[index]}/thumbnail`, { headers: auth });
    t.equal(answer.status, 200, name);
    t.equal(answer.headers.get('content-type'), 'image/webp');
    t.equal(answer.headers.get('cache-control'), 'private, max-age=86400, immutable');
    t.equal(answer.headers.get('x-content-type-options'), 'nosniff');
    t.same([answer.headers.get('x-source-width'), answer.headers.get('x-source-height')], [String(width), String(height)], `${name}: the photo's own size`);
    const bytes = Buffer.from(await answer.arrayBuffer());
    const decoded = await sharp(bytes).metadata();
    t.equal(decoded.format, 'webp', `${name}: a WebP sharp decodes`);
    t.equal(Math.max(decoded.width, decoded.height), Math.min(THUMBNAIL_LONGEST_SIDE, Math.max(width, height)), `${name}: longest side ${Math.max(decoded.width, decoded.height)} px`);
    t.ok(Math.abs(decoded.width / decoded.height - width / height) < 0.01, `${name}: proportions kept (${decoded.width}x${decoded.height})`);
    const original = fixture(name).length;
    t.ok(bytes.length * 3 < original, `${name}: ${bytes.length} bytes, against ${original}`);
  }
  const again = await fetch(`${store.url}/images/${ids[0]}/thumbnail`, { headers: auth });
  t.same(Buffer.from(await again.arrayBuffer()), Buffer.from(await (await fetch(`${store.url}/images/${ids[0]}/thumbnail`, { headers: auth })).arrayBuffer()), 'the same bytes each time');
  t.equal((await fetch(`${store.url}/images/${ids[0]}/thumbnail`)).status, 401, 'behind the key, as the image');

  // The same 404 as the full image: an unknown id, and a file of another kind.
  const draft = (await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }), auth)).body;
  const video = (await postFile(`${store.url}/v2/events/${draft.id}/videos`, fixture('cat-zoom.mp4'), {}, 'video/mp4', auth)).body;
  for (const id of ['00000000-0000-4000-8000-000000000000', video.file_id]) {
    const full = await fetch(`${store.url}/images/${id}`, { headers: auth });
    const small = await fetch(`${store.url}/images/${id}/thumbnail`, { headers: auth });
    t.equal(small.status, 404, `${id}: 404`);
    t.same(await small.json(), await full.json(), `${id}: the download's body`);
  }

  const notImage = await postJson(`${store.url}/v2/events`, { ...smallEvent(), images: [{ base64Image: Buffer.from('plain text, not a picture').toString('base64') }] }, auth);
  const refused = await fetch(`${store.url}/images/${notImage.body.image_ids[0]}/thumbnail`, { headers: auth });
  t.equal(refused.status, 422, 'bytes that are no image');
  t.match((await refused.json()).detail, /cannot be made into a thumbnail/);
  t.equal((await getJson(`${store.url}/health`)).status, 200, 'the store goes on');
});

t.test('one resize at a time, one per image, and the cache held to its bytes', async (t) => {
  const local = await openLocalStore();
  t.teardown(() => local.close());
  const created = await local.create({ ...smallEvent(), images: [...PHOTOS, ...PHOTOS].map(([name]) => imageEntry(name)) });
  const files = created.image_ids.map((id) => local.store.openFile(id)!);
  // Room for about two thumbnails of these photos (4-10 KiB each).
  const thumbnails = new Thumbnails(16 * 1024, 1);
  const running: number[] = [];
  const asked = [...files, ...files].map((file) => thumbnails.of(file).finally(() => running.push(thumbnails.stats.resizing)));
  await new Promise((resolve) => setImmediate(resolve)); // the queue has started; a resize takes longer
  t.same({ resizing: thumbnails.stats.resizing, queued: thumbnails.stats.queued }, { resizing: 1, queued: files.length - 1 }, 'one resize runs, the others wait; a second ask of an image joins the first');
  const made = await Promise.all(asked);
  t.ok(running.every((count) => count <= 1), `never more than one resize running (${running.join()})`);
  t.equal(made[0], made[files.length], 'both asks of an image got the one thumbnail');
  t.ok(thumbnails.stats.bytes <= 16 * 1024, `the cache holds ${thumbnails.stats.bytes} bytes in ${thumbnails.stats.kept} thumbnails, within its bound`);
  t.ok(thumbnails.stats.kept < files.length, 'older thumbnails were dropped');
  const last = files[files.length - 1];
  t.equal(await thumbnails.of(last), made[files.length - 1], 'the newest is kept: asked again, no resize');
  t.equal(thumbnails.stats.resizing + thumbnails.stats.queued, 0);
});
