/**
 * Thumbnails of stored images (docs/API.md, "Thumbnails"; #27 item 10): over real HTTP with the
 * real fixture photos, `GET /images/{image_id}/thumbnail` answers a WebP that sharp decodes, its
 * longest side at most 256 px and its proportions kept, far fewer bytes than the photo, with the
 * photo's own size in X-Source-Width/Height; a missing image answers the download's 404; bytes
 * that are no image 422. Then the bounds of src/events/thumbnails.ts on a store opened in
 * process: one resize at a time, one resize per image however many ask, the cache held to its bytes.
 *
 * Hostile images (docs/RELIABILITY.md, "Thumbnails"), made here: an
 * SVG of nested `<use>` and one of a chain of 50 filters (each took 1.7 s of sharp before, on an
 * idle box; the field's took 23 s) are refused at once naming their format, and a JPEG asked
 * beside four of them is made in under a second; asked again, the same refusal at once; an AVIF
 * over 4.2 megapixels is refused from its header (a 40 MP one took 997 MB of RSS); past
 * THUMBNAIL_QUEUE_MAX thumbnails waiting, 503 with Retry-After; and another site's `<img>`, in
 * Chromium, gets no image from the store.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import t from 'tap';
import { AppError } from '../src/errors.js';
import { MAX_AVIF_PIXELS, MAX_SOURCE_PIXELS, MAX_WHOLE_DECODE_PIXELS, pixelLimit, Thumbnails, THUMBNAIL_LONGEST_SIDE } from '../src/events/thumbnails.js';
import { launchBrowser } from './support/browser.js';
import { fixture, getJson, postJson, smallEvent } from './support/events.js';
import { openLocalStore } from './support/local-store.js';
import { postFile } from './support/multipart.js';
import { startStore, type TestStore } from './support/store-server.js';

/** The fixture photos and their sizes (test/fixtures; /work/shared/fixtures/README.md). */
const PHOTOS: [string, number, number][] = [['retina.jpg', 1411, 1411], ['rocket.jpg', 640, 427], ['camera.jpg', 512, 512], ['cat.jpg', 451, 300]];

const imageEntry = (name: string) => ({ label: name, base64Image: fixture(name).toString('base64') });
const bytesEntry = (bytes: Buffer | string) => ({ base64Image: Buffer.from(bytes).toString('base64') });

/**
 * An SVG of `<use>` nested `levels` deep, each level using the one below ten times: 10^levels
 * rectangles drawn from 1.4 KB (5 levels on a 4000 px canvas took sharp 1.7 s; 6 levels, 16 s).
 * @param tag makes the bytes of two such SVGs differ
 */
function nestedUseSvg(tag: string, levels = 5): string {
  let defs = '<rect id="u0" width="40" height="40" fill="red"/>';
  for (let level = 1; level <= levels; level++) {
    defs += `<g id="u${level}">${Array.from({ length: 10 }, (_, k) => `<use href="#u${level - 1}" x="${k}"/>`).join('')}</g>`;
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="4000" height="4000"><!--${tag}--><defs>${defs}</defs><use href="#u${levels}"/></svg>`;
}

/** An SVG whose one rectangle goes through a chain of `steps` blurs on a 6000 px canvas (3 KB; 50 steps took sharp 1.7 s). */
function filterChainSvg(tag: string, steps = 50): string {
  const blurs = Array.from({ length: steps }, (_, i) => `<feGaussianBlur in="${i === 0 ? 'SourceGraphic' : `b${i - 1}`}" stdDeviation="40" result="b${i}"/>`).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="6000" height="6000"><!--${tag}--><filter id="f" x="0" y="0" width="1" height="1">${blurs}</filter>`
    + '<rect width="6000" height="6000" fill="blue" filter="url(#f)"/></svg>';
}

let shared: Promise<TestStore> | undefined;

/**
 * Stored bytes that are no image (an SVG, text) reach the thumbnail route only from a store that
 * keeps them (docs/API.md, "Image types"), or from one written before images were checked.
 */
const KEEPS_NON_IMAGES = { NON_IMAGE_PAYLOADS: 'warn' };

/** One store, no key, CORS_ALLOWED_ORIGINS set, for the tests that need nothing else (a start takes seconds on a loaded box). */
function sharedStore(): Promise<TestStore> {
  if (!shared) {
    shared = startStore({ CORS_ALLOWED_ORIGINS: 'http://dashboard.plant:3000', ...KEEPS_NON_IMAGES });
    t.teardown(async () => (await shared!).stop());
  }
  return shared;
}

/** A GET of `url`: status, headers, body as JSON when it is JSON, and how long it took (ms). */
async function timedGet(url: string, headers: Record<string, string> = {}) {
  const started = performance.now();
  const answer = await fetch(url, { headers });
  const bytes = Buffer.from(await answer.arrayBuffer());
  const ms = performance.now() - started;
  const json = answer.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(bytes.toString()) : undefined;
  return { status: answer.status, headers: answer.headers, json, bytes, ms };
}

t.test('GET /images/{image_id}/thumbnail: a small WebP of the photo, over real HTTP', async (t) => {
  const store = await startStore({ API_KEY: 'thumb-key', ...KEEPS_NON_IMAGES });
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

  const notImage = await postJson(`${store.url}/v2/events`, { ...smallEvent(), images: [bytesEntry('plain text, not a picture')] }, auth);
  const refused = await fetch(`${store.url}/images/${notImage.body.image_ids[0]}/thumbnail`, { headers: auth });
  t.equal(refused.status, 422, 'bytes that are no image');
  t.match((await refused.json()).detail, /is text \("plain text, not a picture"\); thumbnails are made of JPEG, PNG, WebP, GIF and AVIF images only/);
  t.equal((await getJson(`${store.url}/health`)).status, 200, 'the store goes on');
});

t.test('hostile SVGs are refused at once naming SVG, a JPEG beside four of them takes under a second, and a repeat is answered at once', async (t) => {
  const store = await sharedStore();
  const svgs = [nestedUseSvg('a'), nestedUseSvg('b'), filterChainSvg('a'), filterChainSvg('b')];
  const created = await postJson(`${store.url}/v2/events`, { ...smallEvent(), images: [...svgs.map(bytesEntry), imageEntry('cat.jpg'), imageEntry('rocket.jpg')] });
  t.equal(created.status, 201);
  const ids = created.body.image_ids as string[];
  const [cat, rocket] = ids.slice(svgs.length);
  t.equal((await timedGet(`${store.url}/images/${rocket}/thumbnail`)).status, 200, 'a first thumbnail (sharp loaded)');

  const hostile = ids.slice(0, svgs.length).map((id) => timedGet(`${store.url}/images/${id}/thumbnail`));
  const jpeg = await timedGet(`${store.url}/images/${cat}/thumbnail`);
  t.equal(jpeg.status, 200, 'the JPEG beside them');
  t.ok(jpeg.ms < 1000, `the JPEG's thumbnail in ${jpeg.ms.toFixed(0)} ms, under 1 s, beside four hostile SVGs`);
  for (const [index, answer] of (await Promise.all(hostile)).entries()) {
    t.equal(answer.status, 422, `SVG ${index}: 422`);
    t.match(answer.json?.detail, /is SVG \(image\/svg\+xml\); thumbnails are made of JPEG, PNG, WebP, GIF and AVIF images only/, `SVG ${index}: the detail names the format`);
    t.ok(answer.ms < 1000, `SVG ${index} refused in ${answer.ms.toFixed(0)} ms`);
  }
  const first = await timedGet(`${store.url}/images/${ids[0]}/thumbnail`);
  const repeat = await timedGet(`${store.url}/images/${ids[0]}/thumbnail`);
  t.same([repeat.status, repeat.json], [first.status, first.json], 'asked again: the same error');
  t.ok(repeat.ms < 200, `asked again, answered in ${repeat.ms.toFixed(0)} ms`);
  // The full image is served as it was stored: only its thumbnail is refused.
  t.same((await timedGet(`${store.url}/images/${ids[0]}`)).bytes, Buffer.from(svgs[0]), 'the SVG itself downloads');
});

t.test('an AVIF over 4.2 megapixels is refused from its header; a small one is made', async (t) => {
  const store = await sharedStore();
  // 2100x2100, 4.4 MP: a few hundred bytes (the field's 7999x5000 12-bit one was 2 KB and took 950 MB).
  const make = (size: number) => sharp({ create: { width: size, height: size, channels: 3, background: '#3a6' } }).avif({ effort: 0, bitdepth: 12 }).toBuffer();
  const [large, small] = await Promise.all([make(2100), make(64)]);
  t.ok(large.length < 2048, `the large AVIF is ${large.length} bytes`);
  const ids = (await postJson(`${store.url}/v2/events`, { ...smallEvent(), images: [bytesEntry(large), bytesEntry(small)] })).body.image_ids as string[];
  const refused = await timedGet(`${store.url}/images/${ids[0]}/thumbnail`);
  t.equal(refused.status, 422);
  t.match(refused.json?.detail, /has 2100x2100 pixels \(4\.4 megapixels\); thumbnails are made of AVIF images of at most 4\.2 megapixels/);
  t.ok(refused.ms < 1000, `refused in ${refused.ms.toFixed(0)} ms, nothing decoded`);
  const made = await timedGet(`${store.url}/images/${ids[1]}/thumbnail`);
  t.equal(made.status, 200, 'a small AVIF is made');
  t.same([made.headers.get('x-source-width'), (await sharp(made.bytes).metadata()).format], ['64', 'webp']);
});

t.test('the pixel limit of each kind of image, read from real images', async (t) => {
  const base = () => sharp({ create: { width: 64, height: 48, channels: 3, background: '#3a6' } });
  const kinds: [string, Promise<Buffer>, number][] = [
    ['baseline JPEG', base().jpeg().toBuffer(), MAX_SOURCE_PIXELS],
    ['progressive JPEG', base().jpeg({ progressive: true }).toBuffer(), MAX_WHOLE_DECODE_PIXELS],
    ['PNG', base().png().toBuffer(), MAX_SOURCE_PIXELS],
    ['interlaced PNG', base().png({ progressive: true }).toBuffer(), MAX_WHOLE_DECODE_PIXELS],
    ['lossy WebP', base().webp().toBuffer(), MAX_SOURCE_PIXELS],
    ['lossy WebP with alpha', base().ensureAlpha(0.5).webp().toBuffer(), MAX_SOURCE_PIXELS],
    ['lossless WebP', base().webp({ lossless: true }).toBuffer(), MAX_WHOLE_DECODE_PIXELS],
    ['GIF', base().gif().toBuffer(), MAX_WHOLE_DECODE_PIXELS],
    ['AVIF', base().avif({ effort: 0 }).toBuffer(), MAX_AVIF_PIXELS],
  ];
  for (const [kind, made, pixels] of kinds) {
    const bytes = await made;
    t.equal(pixelLimit(await sharp(bytes).metadata(), bytes).pixels, pixels, `${kind}: ${pixels / 1e6} megapixels`);
  }
});

t.test('past THUMBNAIL_QUEUE_MAX thumbnails waiting, 503 thumbnails_busy with Retry-After', async (t) => {
  const store = await startStore({ THUMBNAIL_QUEUE_MAX: '0' });
  t.teardown(store.stop);
  // 35 MP of one colour (0.5 MB): its resize takes a few hundred ms, while the others arrive.
  const png = await sharp({ create: { width: 7000, height: 5000, channels: 3, background: '#3a6' } }).png().toBuffer();
  const ids = (await postJson(`${store.url}/v2/events`, { ...smallEvent(), images: Array.from({ length: 6 }, () => bytesEntry(png)) })).body.image_ids as string[];
  const answers = await Promise.all(ids.map((id) => timedGet(`${store.url}/images/${id}/thumbnail`)));
  const statuses = answers.map((answer) => answer.status);
  t.ok(statuses.every((status) => status === 200 || status === 503), `each made or refused (${statuses.join()})`);
  t.ok(statuses.includes(200), 'one made');
  const busy = answers.filter((answer) => answer.status === 503);
  t.ok(busy.length > 0, `${busy.length} refused while one was being made`);
  for (const answer of busy) {
    t.equal(answer.headers.get('retry-after'), '1');
    t.match(answer.json?.detail, /thumbnails are being made or waiting; retry after 1 s/);
  }
  // Once the queue is free, a refused one is made (a 503 is not kept as a failure).
  const later = await timedGet(`${store.url}/images/${ids[statuses.indexOf(503)]}/thumbnail`);
  t.equal(later.status, 200, 'asked again once the queue is free: made');
});

t.test('another site\'s <img> gets no image or thumbnail (Sec-Fetch-Site: cross-site), in Chromium', async (t) => {
  const store = await sharedStore();
  const [imageId] = (await postJson(`${store.url}/v2/events`, { ...smallEvent(), images: [imageEntry('cat.jpg')] })).body.image_ids as string[];
  const paths = [`/images/${imageId}`, `/images/${imageId}/thumbnail`];

  for (const path of paths) {
    const crossSite = await timedGet(`${store.url}${path}`, { 'sec-fetch-site': 'cross-site', 'sec-fetch-dest': 'image' });
    t.equal(crossSite.status, 403, `${path}: a cross-site request`);
    t.match(crossSite.json?.detail, /not served to pages of other sites \(Sec-Fetch-Site: cross-site\)/);
    t.equal((await timedGet(`${store.url}${path}`, { 'sec-fetch-site': 'same-origin' })).status, 200, `${path}: the store's own page`);
    t.equal((await timedGet(`${store.url}${path}`)).status, 200, `${path}: a producer (no browser header)`);
    const listed = await timedGet(`${store.url}${path}`, { 'sec-fetch-site': 'cross-site', origin: 'http://dashboard.plant:3000' });
    t.equal(listed.status, 200, `${path}: a CORS fetch of a CORS_ALLOWED_ORIGINS page`);
    t.equal(listed.headers.get('access-control-allow-origin'), 'http://dashboard.plant:3000');
  }

  // A page of another site (localhost, against the store's 127.0.0.1) showing the store's images.
  const site = http.createServer((_req, res) => res.end('<!doctype html><title>another site</title>'));
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => site.close(resolve)));
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const tab = await browser.newPage();
  tab.setDefaultTimeout(10_000);
  await tab.goto(`http://localhost:${(site.address() as AddressInfo).port}/`);
  const shown = await tab.evaluate(async (urls) => Promise.all(urls.map((url) => new Promise<string>((resolve) => {
    const img = document.createElement('img');
    img.onload = () => resolve('shown');
    img.onerror = () => resolve('refused');
    img.src = url;
    document.body.append(img);
  }))), paths.map((path) => `${store.url}${path}`));
  t.same(shown, ['refused', 'refused'], 'neither the image nor its thumbnail is shown on another site\'s page');
});

t.test('one resize at a time, one per image, and the cache held to its bytes', async (t) => {
  const local = await openLocalStore();
  t.teardown(() => local.close());
  const created = await local.create({ ...smallEvent(), images: [...PHOTOS, ...PHOTOS].map(([name]) => imageEntry(name)) });
  const files = created.image_ids.map((id) => local.store.openFile(id)!);
  // Room for about two thumbnails of these photos (4-10 KiB each).
  const thumbnails = new Thumbnails({ maxCacheBytes: 16 * 1024, concurrency: 1 });
  const running: number[] = [];
  const asked = [...files, ...files].map((file) => thumbnails.of(file).finally(() => running.push(thumbnails.stats.resizing)));
  t.same({ resizing: thumbnails.stats.resizing, queued: thumbnails.stats.queued }, { resizing: 0, queued: files.length }, 'one wait per image: a second ask of an image joins the first');
  const made = await Promise.all(asked);
  t.ok(running.every((count) => count <= 1), `never more than one resize running (${running.join()})`);
  t.equal(made[0], made[files.length], 'both asks of an image got the one thumbnail');
  t.ok(thumbnails.stats.bytes <= 16 * 1024, `the cache holds ${thumbnails.stats.bytes} bytes in ${thumbnails.stats.kept} thumbnails, within its bound`);
  t.ok(thumbnails.stats.kept < files.length, 'older thumbnails were dropped');
  const last = files[files.length - 1];
  t.equal(await thumbnails.of(last), made[files.length - 1], 'the newest is kept: asked again, no resize');
  t.equal(thumbnails.stats.resizing + thumbnails.stats.queued, 0);
});

t.test('the queue bound counts thumbnails being made or waiting; a refusal is kept', async (t) => {
  const local = await openLocalStore(KEEPS_NON_IMAGES);
  t.teardown(() => local.close());
  const created = await local.create({ ...smallEvent(), images: [...PHOTOS.map(([name]) => imageEntry(name)), bytesEntry(nestedUseSvg('kept'))] });
  const files = created.image_ids.map((id) => local.store.openFile(id)!);
  const photos = files.slice(0, PHOTOS.length);
  const svg = files[PHOTOS.length];
  const thumbnails = new Thumbnails({ concurrency: 1, maxQueued: 2 });
  const asked = photos.map((file) => thumbnails.of(file).then(() => 'made', (err: AppError) => err));
  const answers = await Promise.all(asked);
  t.same(answers.slice(0, 3), ['made', 'made', 'made'], 'one being made and two waiting: taken');
  t.match(answers[3], { code: 'thumbnails_busy', status: 503, headers: { 'Retry-After': '1' } }, 'the fourth: refused');
  t.equal(await thumbnails.of(photos[3]).then(() => 'made'), 'made', 'asked again once the queue is free: made');

  const refusal = await thumbnails.of(svg).catch((err: unknown) => err);
  t.match(refusal, { code: 'thumbnail_unavailable', detail: /is SVG/ });
  t.equal(await thumbnails.of(svg).catch((err: unknown) => err), refusal, 'asked again: the same refusal, kept');
  t.equal(thumbnails.stats.failures, 1);
});
