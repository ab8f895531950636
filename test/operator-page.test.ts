/**
 * The operator page in a real browser (docs/USAGE.md, "The operator page"): Debian's Chromium
 * driven by playwright-core opens `/` on a real store with API_KEY set; the page asks for the
 * key (and again when the store refuses it), events posted over real HTTP with real photos appear
 * newest first with their detections drawn as boxes where the detections say, a device filter
 * leaves another device's events out, the gauges show what /stats says, and a reset empties the
 * list (a `deleted` message). A hub's card shows its pending messages and lag (docs/OPERATIONS.md,
 * "Hub mode"); other stores hide it.
 */
import fs from 'node:fs';
import http from 'node:http';
import { connect } from '@nats-io/transport-node';
import type { Browser, BrowserContextOptions, Locator, Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { errorRegistry } from '../src/errors.js';
import { launchBrowser } from './support/browser.js';
import { fixture, getJson, postJson } from './support/events.js';
import { deviceWithOneEvent, publishAwaitingImage } from './support/fleet.js';
import { startBroker } from './support/mosquitto.js';
import { startNatsServer } from './support/nats-server.js';
import { postFile } from './support/multipart.js';
import { startStore } from './support/store-server.js';
import { until } from './support/waiting.js';

/**
 * The one Chromium this file's tests open their pages in, launched at the first and closed when
 * the file ends: a launch is about 3 s of CPU. Each page has a browser context of its own (its
 * storage, its clock), closed with it. Chromium resolves store.lan and events.plant.example to the
 * store (the ALLOWED_HOSTS test); every other page opens 127.0.0.1.
 */
let launched: Promise<Browser> | undefined;
t.teardown(async () => {
  if (launched) await (await launched).close();
});

/** A page in a browser context of its own, closed when `t` ends. */
async function newPage(t: Test, options: BrowserContextOptions = {}): Promise<Page> {
  launched ??= launchBrowser(['--host-resolver-rules=MAP store.lan 127.0.0.1, MAP events.plant.example 127.0.0.1']);
  const page = await (await launched).newPage(options);
  t.teardown(() => page.close());
  return page;
}

const KEY = 'operator-key-7c2a';
const auth = { 'X-API-Key': KEY };

/** A detection: centre, size (pixels of the image), class. */
const detection = (name: string, x: number, y: number, width: number, height: number) => ({ class: name, x, y, width, height, confidence: 0.9 });

/** cat.jpg is 451x300, rocket.jpg 640x427, camera.jpg 512x512 (test/fixtures). */
const CAT = { width: 451, height: 300 };
const CAT_BOX = detection('cat', 225, 150, 200, 180);

const image = (name: string, detections: unknown[]) => ({ label: name, base64Image: fixture(name).toString('base64'), objectDetections: detections });

/** An event of `device` with `images`. */
const event = (device: string, images: unknown[], result = 'pass') => ({
  inferenceTimestamp: new Date().toISOString(),
  eventSchema: 'quality_check',
  eventData: { result },
  deviceId: device,
  images,
});

/** The ids of the listed events, top to bottom. */
const listedIds = (page: Page): Promise<string[]> => page.locator('#events > li.event').evaluateAll((items) => items.map((item) => (item as HTMLElement).dataset.id!));

/** The ids listed once the list holds `count` events (the page updates it live). */
const listedOnce = (page: Page, count: number): Promise<string[]> => until(`${count} events listed`, async () => {
  const ids = await listedIds(page);
  return ids.length === count && ids;
}, 15_000);

/** How many boxes each thumbnail of `item` shows. */
const boxesPerThumbnail = (item: Locator): Promise<number[]> => item.locator('.thumb').evaluateAll((thumbs) => thumbs.map((thumb) => thumb.querySelectorAll('.box').length));

/** How often the page reads /stats (ms; page/main.ts STATS_EVERY_MS). */
const STATS_EVERY_MS = 5000;

/**
 * Waits until `condition` holds for what the page shows from /stats, moving the page's clock on
 * by one read's period before each look instead of waiting it out (Playwright's `page.clock`,
 * installed before the page loads; time flows as usual in between).
 */
const untilStatsShow = <T>(page: Page, what: string, condition: () => Promise<T>) => until(what, async () => {
  await page.clock.fastForward(STATS_EVERY_MS);
  return condition();
}, 15_000);

async function createEvent(url: string, body: unknown): Promise<string> {
  const created = await postJson(`${url}/v2/events`, body, auth);
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
  return created.body.id as string;
}

t.test('the page and its files open without the key, with their types; nothing else is served', async (t) => {
  const store = await startStore({ API_KEY: KEY });
  t.teardown(store.stop);
  const types: Record<string, RegExp> = { '/': /^text\/html/, '/operator/page.css': /^text\/css/, '/operator/main.js': /^text\/javascript/, '/operator/thumbnail.js': /^text\/javascript/ };
  for (const [path, type] of Object.entries(types)) {
    const answer = await fetch(store.url + path);
    t.equal(answer.status, 200, `${path} without the key`);
    t.match(answer.headers.get('content-type'), type, `${path}: its type`);
    t.equal(answer.headers.get('x-content-type-options'), 'nosniff');
    await answer.arrayBuffer();
  }
  for (const path of ['/operator/index.html', '/operator/main.ts', '/operator/..%2Fpackage.json', '/operator/constructor']) {
    const answer = await fetch(store.url + path);
    t.equal(answer.status, 404, `${path}: not a file of the page`);
    await answer.arrayBuffer();
  }
  t.equal((await fetch(`${store.url}/stats`)).status, 401, 'the data still needs the key');
});

t.test('under a name not in ALLOWED_HOSTS the page and its scripts answer 421, the HTML saying what to set; under a listed name both load', async (t) => {
  const store = await startStore({ ALLOWED_HOSTS: 'events.plant.example' });
  t.teardown(store.stop);
  const port = Number(new URL(store.url).port);
  /** GET (or HEAD) `path` with `host` and no browser header, as a browser navigating over plain HTTP sends it. */
  const ask = (path: string, host: string, method = 'GET') => new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, path, method, headers: { host, accept: 'text/html' }, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
  const page = await ask('/', `store.lan:${port}`);
  t.equal(page.status, 421, 'the HTML under an unlisted name, without Origin or Sec-Fetch-Site');
  t.match(page.headers['content-type'], /^text\/html/, 'a page a browser shows');
  t.match(page.headers['content-security-policy'], /default-src 'none'/);
  const text = page.body.toString();
  t.match(text, /<title>421 Misdirected Request/);
  t.match(text, `Host &quot;store.lan:${port}&quot; is not a name of this store: add &quot;store.lan&quot; to ALLOWED_HOSTS`, 'names the host it saw and the setting');
  t.equal((await ask('/', `store.lan:${port}`, 'HEAD')).status, 421, 'HEAD / too');
  for (const file of ['main.js', 'page.css']) {
    const asset = await ask(`/operator/${file}`, `store.lan:${port}`);
    t.equal(asset.status, 421, `/operator/${file} under the same rule`);
  }
  const escaped = await ask('/', 'x<script>.example');
  t.equal(escaped.status, 400, 'a Host that is not host[:port]: 400 malformed_host, before routing');
  t.match(escaped.headers['content-type'], /^text\/html/, 'as the page\'s HTML too');
  t.match(escaped.body.toString(), 'Host &quot;x&lt;script&gt;.example&quot; is not host[:port]', 'the host is escaped in the page');
  for (const host of [`events.plant.example:${port}`, `127.0.0.1:${port}`, `localhost:${port}`]) {
    t.equal((await ask('/', host)).status, 200, `the HTML under ${host}`);
    t.equal((await ask('/operator/main.js', host)).status, 200, `its script under ${host}`);
  }
  t.equal((await ask('/health', 'event-store:8001')).status, 421, 'every route under an unlisted name, /health too (docs/SECURITY.md)');

  // The report, in a browser: Chromium resolves both names to the store (newPage).
  const tab = await newPage(t);
  tab.setDefaultTimeout(10_000);
  const refused = await tab.goto(`http://store.lan:${port}/`);
  t.equal(refused?.status(), 421, 'the browser gets 421 for the HTML');
  t.match(await tab.locator('#error-detail').innerText(), 'add "store.lan" to ALLOWED_HOSTS', 'and reads what to set, not "run npm run build"');
  const scripts: number[] = [];
  tab.on('response', (response) => response.url().endsWith('/operator/main.js') && scripts.push(response.status()));
  const listed = await tab.goto(`http://events.plant.example:${port}/`);
  t.equal(listed?.status(), 200, 'a listed name: the HTML');
  await tab.locator('#connection[data-state="live"]').waitFor();
  t.same(scripts, [200], 'and its script');
  t.equal(await tab.locator('#loading').count(), 0, 'the page ran');
});

t.test('the operator page: key, live events with their boxes, device filter, gauges, reset', async (t) => {
  // Cloud upload to a port nobody listens on: finalized events wait in the upload backlog.
  const store = await startStore({ API_KEY: KEY, MAX_RECORDS: '40', RETENTION_DAYS: '30', CLOUD_UPLOAD_URL: 'http://127.0.0.1:9/', DEFAULT_SOLUTION_ID: 'operator-test' });
  t.teardown(store.stop);
  const page = await newPage(t, { viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(10_000);
  await page.clock.install();
  const failedRequests: string[] = [];
  // With why it failed (net::ERR_ABORTED, ERR_CONNECTION_RESET...), for the report.
  page.on('requestfailed', (request) => failedRequests.push(`${request.url()} ${request.failure()?.errorText ?? ''}`));
  const pageErrors: string[] = [];
  page.on('pageerror', (err) => pageErrors.push(err.message));

  const opened = await page.goto(`${store.url}/`);
  t.equal(opened?.status(), 200, '/ opens without the key');
  t.match(opened?.headers()['content-type'], /^text\/html/);
  t.match(opened?.headers()['content-security-policy'], /script-src 'self'/);

  await t.test('the key is asked for, again when the store refuses it, and kept', async (t) => {
    await page.locator('#key-form').waitFor({ state: 'visible' });
    t.notOk(await page.locator('#key-refused').isVisible(), 'no key yet: none refused');
    await page.fill('#key-input', 'not-the-key');
    await page.click('#key-form button[type="submit"]');
    await page.locator('#key-refused').waitFor({ state: 'visible' });
    t.ok(await page.locator('#key-form').isVisible(), 'a wrong key (401): the form again, saying so');

    await page.fill('#key-input', KEY);
    await page.click('#key-form button[type="submit"]');
    await page.locator('#key-form').waitFor({ state: 'hidden' });
    await page.locator('#connection[data-state="live"]').waitFor();
    t.equal(await page.evaluate(() => localStorage.getItem('edge-event-store.api_key')), KEY, 'kept in localStorage');
  });

  let catEvent = '';
  let otherDevice = '';
  let hidden = '';
  let shown = '';
  await t.test('posted events appear newest first, with their detections as boxes', async (t) => {
    catEvent = await createEvent(store.url, event('cam-1', [
      image('cat.jpg', [CAT_BOX, detection('ear', 150, 60, 50, 40)]),
      image('rocket.jpg', [detection('rocket', 320, 213, 120, 380)]),
    ], 'fail'));
    otherDevice = await createEvent(store.url, { ...event('cam-2', [image('camera.jpg', [detection('person', 256, 200, 140, 300)])]), draft: true });

    t.same(await listedOnce(page, 2), [otherDevice, catEvent], 'both listed, newest first');
    const catItem = page.locator(`li.event[data-id="${catEvent}"]`);
    const otherItem = page.locator(`li.event[data-id="${otherDevice}"]`);
    t.same(await until('the cat\'s boxes drawn', async () => { const counts = await boxesPerThumbnail(catItem); return counts.join() === '2,1' && counts; }, 15_000), [2, 1], 'two boxes on the cat, one on the rocket');
    t.same(await until('the other image\'s box drawn', async () => { const counts = await boxesPerThumbnail(otherItem); return counts.join() === '1' && counts; }, 15_000), [1], 'one box on the other device\'s image');
    t.match(await catItem.locator('.event-head').innerText(), /cam-1[\s\S]*quality_check[\s\S]*result: fail/, 'time, device, schema and data shown');
    t.equal(await otherItem.locator('.draft').count(), 1, 'a draft says so');

    const thumb = catItem.locator('.thumb').first();
    const img = (await thumb.locator('img').boundingBox())!;
    const box = (await thumb.locator('.box').first().boundingBox())!;
    const scaleX = img.width / CAT.width;
    const scaleY = img.height / CAT.height;
    t.ok(Math.abs(scaleX - scaleY) < 0.01, `the thumbnail keeps the image's proportions (${img.width}x${img.height})`);
    const expected = {
      x: img.x + (CAT_BOX.x - CAT_BOX.width / 2) * scaleX,
      y: img.y + (CAT_BOX.y - CAT_BOX.height / 2) * scaleY,
      width: CAT_BOX.width * scaleX,
      height: CAT_BOX.height * scaleY,
    };
    for (const side of ['x', 'y', 'width', 'height'] as const) {
      t.ok(Math.abs(box[side] - expected[side]) <= 1.5, `the cat's box ${side}: ${box[side].toFixed(1)}, expected ${expected[side].toFixed(1)}`);
    }
    const label = thumb.locator('.box-label').first();
    t.notOk(await label.isVisible(), 'a thumbnail\'s labels are hidden: they would cover it');
    await thumb.locator('.box').first().hover();
    t.match(await label.innerText(), /cat/, 'and show on hover, with the class');
    const src = await thumb.locator('img').getAttribute('src');
    t.match(src, /^blob:/, 'the image is shown from a blob URL: the key stays out of URLs');
    const thumbWidth = await thumb.locator('img').evaluate((image: HTMLImageElement) => image.naturalWidth);
    t.ok(thumbWidth <= 256 && thumbWidth < CAT.width, `the store's thumbnail (${thumbWidth} px wide), not the photo`);

    // Clicking the thumbnail shows the photo at full size with its boxes, labels outside them.
    const fullImage = page.waitForResponse((response) => /\/images\/[^/]+$/.test(new URL(response.url()).pathname));
    await thumb.click();
    t.equal((await fullImage).status(), 200, 'the full image is fetched');
    const viewer = page.locator('#viewer');
    await viewer.locator('img').waitFor();
    t.same(await viewer.locator('img').evaluate((image: HTMLImageElement) => [image.naturalWidth, image.naturalHeight]), [CAT.width, CAT.height], 'at its own size');
    await viewer.locator('.box').nth(1).waitFor();
    t.equal(await viewer.locator('.box').count(), 2, 'with both boxes');
    const shown = (await viewer.locator('img').boundingBox())!;
    const scale = shown.width / CAT.width;
    for (const index of [0, 1]) {
      const box = (await viewer.locator('.box').nth(index).boundingBox())!;
      const boxLabel = (await viewer.locator('.box-label').nth(index).boundingBox())!;
      t.ok(await viewer.locator('.box-label').nth(index).isVisible(), `label ${index} shown`);
      const overlaps = boxLabel.x < box.x + box.width - 2 && boxLabel.x + boxLabel.width > box.x + 2
        && boxLabel.y < box.y + box.height - 2 && boxLabel.y + boxLabel.height > box.y + 2;
      t.notOk(overlaps, `label ${index} lies outside its box (${box.width.toFixed(0)}x${box.height.toFixed(0)} px)`);
    }
    const ear = (await viewer.locator('.box').nth(1).boundingBox())!;
    t.ok(Math.abs(ear.width - 50 * scale) <= 1.5, 'the small box at its place in the full image');
    await page.keyboard.press('Escape');
    await viewer.waitFor({ state: 'hidden' });
    // The dialog's close event, whose handler releases the image, is a task queued after the
    // dialog hides (HTML, "close the dialog"): wait for it rather than race it.
    await viewer.locator('img').waitFor({ state: 'detached' });
    t.equal(await viewer.locator('img').count(), 0, 'closed: its image released');

    // Shown once a second.
    const rate = await until('events per second counted', async () => Number(await page.locator('#rate').innerText()), 3000);
    t.ok(rate > 0, `events per second counted (${rate})`);
  });

  await t.test('the gauges show what /stats says', async (t) => {
    const shown = async () => {
      const { body: stats } = await getJson(`${store.url}/stats`, auth);
      const gauge = (id: string) => page.locator(`#${id}`);
      return {
        stats,
        records: await gauge('gauge-records').locator('meter').getAttribute('data-percent'),
        recordsText: await gauge('gauge-records').locator('.gauge-value').innerText(),
        storage: await gauge('gauge-storage').locator('meter').getAttribute('data-percent'),
        storageText: await gauge('gauge-storage').locator('.gauge-value').innerText(),
        daysText: await gauge('gauge-days').locator('.gauge-value').innerText(),
        uploads: await page.locator('#uploads-pending').innerText(),
      };
    };
    // /stats is read every 5 s; storage may move a little between two reads (LMDB pages), so the
    // page is read until it shows the same answer as the test's own read.
    const seen = await untilStatsShow(page, 'the gauges to show /stats', async () => {
      const s = await shown();
      return s.records === String(s.stats.capacity.records.percent_used) && s.storage === String(s.stats.capacity.storage.percent_used)
        && s.storageText.endsWith(` ${s.stats.capacity.storage.bytes_used_formatted} of ${s.stats.capacity.storage.bytes_limit_formatted}`)
        && s.uploads === String(s.stats.capacity.uploads_pending) && s;
    });
    const { stats } = seen;
    t.equal(stats.capacity.records.used, 2);
    t.equal(seen.records, '5', 'records: 2 of MAX_RECORDS 40 is 5%');
    t.match(seen.recordsText, /^5% · 2 of 40$/);
    t.equal(seen.storage, String(stats.capacity.storage.percent_used), 'storage percent');
    t.ok(seen.storageText.endsWith(`${stats.capacity.storage.bytes_used_formatted} of ${stats.capacity.storage.bytes_limit_formatted}`), `storage figures: ${seen.storageText}`);
    t.match(seen.daysText, / of 30 days$/, 'days of data of RETENTION_DAYS');
    t.equal(stats.capacity.uploads_pending, 1, 'the unreachable cloud leaves the finalized event waiting (a draft is not shipped)');
    t.equal(seen.uploads, '1', 'cloud upload backlog');
    t.notOk(await page.locator('#mqtt').isVisible(), 'MQTT off (mqtt null): its card is hidden');
    t.notOk(await page.locator('#hub').isVisible(), 'not a hub (hub null): its card is hidden');
    t.ok(await page.locator('#disk-writes').isVisible(), 'the disk writes card');
    t.equal(stats.disk_writes.measuring, true, 'a store just started is measuring');
    const card = page.locator('#disk-writes');
    const row = (list: string, figure: string) => card.locator(`dl.${list} dd[data-figure="${figure}"]`).innerText();
    t.equal(await card.locator('.figure').innerText(), 'measuring', 'so the card leads with "measuring", no figure a day');
    t.match(await card.locator('.headline').innerText(), /^The store's own writes: measuring until 10 min and 1,000 events \(so far \d+ min, \d+ events\)$/, 'the store\'s own, and how far the measurement is');
    t.same([await row('own', 'per-event'), await row('own', 'amplification')], ['measuring', 'measuring'], 'no figure per event, nor over accepted');
    t.match(await row('own', 'one-time'), /^[\d.]+ (B|KiB|MiB)$/, 'the one-time writes of start-up, apart');
    t.match(await row('own', 'total'), /^[\d.]+ (B|KiB|MiB|GiB)$/, 'and the bytes since the start');
    t.same(await card.locator('dl.own dt').allInnerTexts(), ['per event', 'over accepted', 'one-time, at start', 'since the start'], 'each figure with its label');
    const device = stats.disk_writes.device;
    if (device) {
      t.equal(await card.locator('.device-label').innerText(), `Device ${device.name}: every writer on the disk, not only the store`, 'then the device\'s, labelled as not the store\'s');
      t.same([await row('device', 'per-day'), await row('device', 'per-event'), await row('device', 'amplification')], ['measuring', 'measuring', 'measuring'], 'measuring too');
    } else {
      t.notOk(await card.locator('dl.device').isVisible(), 'no device: no second list');
    }

    // The store runs a cleanup of its own at start-up; a manual one comes after it.
    t.equal((await postJson(`${store.url}/admin/cleanup`, undefined, auth)).status, 200);
    const { body: after } = await getJson(`${store.url}/stats`, auth);
    t.equal(after.last_cleanup.trigger, 'MANUAL');
    await untilStatsShow(page, 'the latest cleanup shown', async () => await page.locator('#last-cleanup time').getAttribute('datetime') === after.last_cleanup.finished_at);
    t.equal(await page.locator('#last-cleanup time').getAttribute('datetime'), after.last_cleanup.finished_at, 'the latest cleanup, when it finished');
    t.ok(await page.locator('#last-cleanup').isVisible());
    t.match(await page.locator('#last-cleanup .note').innerText(), new RegExp(`^manual: ${after.last_cleanup.records_deleted} records, ${after.last_cleanup.files_deleted} files deleted; `));
    // The scrub's card, once its first step reported (docs/STORAGE.md, "The scrub").
    await untilStatsShow(page, 'the scrub shown', async () => await page.locator('#scrub').isVisible());
    t.equal(await page.locator('#scrub .figure').innerText(), 'No damage found', 'the scrub found nothing on a sound log');
    t.match(await page.locator('#scrub .note').innerText(), /^\d+ passes of 168 h, (first pass under way|last pass .+); [\d.]+ (B|KiB|MiB) read$/);

    // Once the measurement holds 10 minutes and 1,000 events the store gives its figures. Rather
    // than wait them out, the page's reads of /stats get the store's own answer with them set.
    await page.route('**/stats', async (route) => {
      const answer = await route.fetch();
      const body = await answer.json();
      const writes = body.disk_writes;
      Object.assign(writes, { measuring: false, measured_since: new Date(Date.now() - 3_600_000).toISOString(), measured_events: 36_000 });
      Object.assign(writes, { bytes_written_per_day: 12 * 1024 ** 3, bytes_written_per_event: 14_541, write_amplification: 3.52 });
      if (writes.device) Object.assign(writes.device, { bytes_written_per_day: 15 * 1024 ** 3, bytes_written_per_event: 18_000, write_amplification: 4.1 });
      await route.fulfill({ response: answer, json: body });
    });
    const figure = await untilStatsShow(page, 'bytes a day shown', async () => {
      const text = await card.locator('.figure').innerText();
      return text.endsWith('/day') && text;
    });
    t.equal(figure, '12.0 GiB/day', 'the card leads with the store\'s own bytes a day');
    // The page dates a start of another day ("7 Dec, 23:11"): a run just after midnight.
    t.match(await card.locator('.headline').innerText(), /^The store's own writes, a day, over 36,000 events since (\d+ [A-Z][a-z]+, )?\d\d:\d\d/, 'over the measurement');
    t.same([await row('own', 'per-event'), await row('own', 'amplification')], ['14.2 KiB', '3.52×'], 'per event and over accepted');
    if (device) t.same([await row('device', 'per-day'), await row('device', 'per-event'), await row('device', 'amplification')], ['15.0 GiB/day', '17.6 KiB', '4.1×'], 'the device\'s below');
    // Waits for a read the handler still holds, which unrouting mid-way could fail.
    await page.unrouteAll({ behavior: 'wait' });
  });

  await t.test('a finalized draft is updated in place, with its attachments, each saved with the key', async (t) => {
    const video = fixture('cat-zoom.mp4');
    const csv = Buffer.from('frame,count\n1,3\n2,4\n');
    t.equal((await postFile(`${store.url}/v2/events/${otherDevice}/videos`, video, { label: 'line-3' }, 'video/mp4', auth)).status, 201);
    t.equal((await postFile(`${store.url}/v2/events/${otherDevice}/local-only-files`, csv, { label: 'counts.csv', content_type: 'text/csv' }, 'text/csv', auth)).status, 201);
    t.equal((await postJson(`${store.url}/v2/events/${otherDevice}/finalize`, undefined, auth)).status, 200);
    const item = page.locator(`li.event[data-id="${otherDevice}"]`);
    await until('the draft mark gone', async () => await item.locator('.draft').count() === 0, 15_000);
    t.equal(await item.locator('.draft').count(), 0, 'no longer marked draft');
    t.same(await boxesPerThumbnail(item), [1], 'its thumbnail and box still there');
    t.same(await listedIds(page), [otherDevice, catEvent], 'in its place');

    const attachments = item.locator('.attachments li');
    t.same(await attachments.allInnerTexts(), [
      `video: line-3 video/mp4, ${(video.length / 1024).toPrecision(3)} KiB`, // 68,943 bytes: 67.3 KiB
      `file: counts.csv text/csv, ${csv.length} B`,
    ], 'each attachment with its kind, label, type and size');
    // Chromium adds the extension of the blob's type to a name without one.
    for (const [index, bytes, name] of [[0, video, 'line-3.mp4'], [1, csv, 'counts.csv']] as const) {
      const saved = page.waitForEvent('download');
      await attachments.nth(index).locator('a').click();
      const download = await saved;
      t.equal(download.suggestedFilename(), name, `${name}: saved under its label`);
      t.ok(fs.readFileSync((await download.path())!).equals(bytes), `${name}: the bytes attached, fetched with the key (API_KEY is set)`);
    }
    t.equal(await page.locator('#viewer').isVisible(), false, 'a link does not open the image viewer');
  });

  await t.test('a device filter leaves other devices\' events out, listed and live', async (t) => {
    await page.fill('#filter-device', 'cam-1');
    await page.press('#filter-device', 'Enter');
    t.same(await listedOnce(page, 1), [catEvent], 'only cam-1\'s event listed');
    await page.locator('#connection[data-state="live"]').waitFor();
    t.equal(new URL(page.url()).searchParams.get('device_id'), 'cam-1', 'the filter is in the page\'s URL');

    hidden = await createEvent(store.url, event('cam-2', [image('camera.jpg', [])]));
    shown = await createEvent(store.url, event('cam-1', [image('cat.jpg', [CAT_BOX])]));
    // Messages come in created_at order: once cam-1's later event is listed, cam-2's was left out.
    t.same(await listedOnce(page, 2), [shown, catEvent], 'the new cam-1 event listed');
    t.notOk(await page.locator(`li.event[data-id="${hidden}"]`).count(), 'the cam-2 event is not');

    await page.fill('#filter-device', '');
    await page.press('#filter-device', 'Enter');
    t.same(await listedOnce(page, 4), [shown, hidden, otherDevice, catEvent], 'no filter: every event');
  });

  await t.test('a query lists what the event search answers; a malformed one shows where it is wrong', async (t) => {
    await page.fill('#filter-query', 'class:cat device:cam-1');
    await page.press('#filter-query', 'Enter');
    t.same(await listedOnce(page, 2), [shown, catEvent], 'the two cam-1 events with a cat');
    await page.locator('#connection[data-state="search"]').waitFor();
    t.equal(new URL(page.url()).searchParams.get('q'), 'class:cat device:cam-1', 'the query is in the page\'s URL');

    await page.fill('#filter-query', 'class:person OR');
    await page.press('#filter-query', 'Enter');
    const problem = page.locator('#query-problem');
    await problem.waitFor({ state: 'visible' });
    t.match(await problem.textContent(), /^Invalid query at column 14: OR needs a term after it, but the query ends\n {2}class:person OR\n {15}\^/, 'the store\'s reason, with its caret under the column');
    t.same(await listedIds(page), [], 'nothing listed');

    await page.fill('#filter-query', '');
    await page.press('#filter-query', 'Enter');
    await page.locator('#connection[data-state="live"]').waitFor();
    t.ok(await problem.isHidden(), 'the query\'s error is gone with it');
    t.same(await listedOnce(page, 4), [shown, hidden, otherDevice, catEvent], 'no query: live again, every event');
  });

  await t.test('a filter nothing matches says so; an unknown schema shows the store\'s reason', async (t) => {
    const empty = page.locator('#events[data-answered]:empty');
    await page.fill('#filter-device', 'cam-nobody');
    await page.press('#filter-device', 'Enter');
    await empty.waitFor();
    t.equal(await empty.evaluate((list) => getComputedStyle(list, '::before').content), '"No events match these filters."', 'an empty answer says nothing matches');

    await page.fill('#filter-device', '');
    await page.fill('#filter-schema', 'detection');
    await page.press('#filter-schema', 'Enter');
    const problem = page.locator('#query-problem');
    await problem.waitFor({ state: 'visible' });
    t.match(await problem.textContent(), "Invalid event_schema 'detection': expected one of quality_check", 'the store\'s reason for the schema');
    await page.fill('#filter-schema', '');
    await page.press('#filter-schema', 'Enter');
    t.same(await listedOnce(page, 4), [shown, hidden, otherDevice, catEvent], 'no filter: every event again');
    t.ok(await problem.isHidden(), 'and the reason is gone');
  });

  await t.test('a reset empties the list', async (t) => {
    const { body: token } = await postJson(`${store.url}/reset/request`, {}, auth);
    t.equal((await postJson(`${store.url}/reset/confirm`, { reset_token: token.reset_token }, auth)).status, 200);
    t.same(await listedOnce(page, 0), [], 'deleted (reset): nothing listed');
  });

  await t.test('a thumbnail answered 503 thumbnails_busy is asked again after Retry-After', async (t) => {
    // The store answers so when THUMBNAIL_QUEUE_MAX thumbnails wait already; here each thumbnail's first ask is answered so.
    const asked = new Map<string, number>();
    await page.route('**/images/*/thumbnail', async (route) => {
      const url = route.request().url();
      asked.set(url, (asked.get(url) ?? 0) + 1);
      if (asked.get(url) === 1) {
        await route.fulfill({ status: 503, headers: { 'Retry-After': '1', 'Content-Type': 'application/json' }, body: JSON.stringify({ detail: errorRegistry.thumbnails_busy.message }) });
      } else {
        await route.continue();
      }
    });
    const busy = await createEvent(store.url, event('cam-1', [image('camera.jpg', [detection('person', 256, 200, 140, 300)])]));
    await listedOnce(page, 1);
    await until('the thumbnail asked once', async () => asked.size === 1, 15_000);
    const item = page.locator(`li.event[data-id="${busy}"]`);
    t.equal(await item.locator('.thumb img').count(), 0, 'not shown while the store is busy');
    t.equal(await item.locator('.missing').count(), 0, 'nor marked unavailable');
    await page.clock.fastForward(1000);
    t.same(await until('the thumbnail shown', async () => { const counts = await boxesPerThumbnail(item); return counts.join() === '1' && counts; }, 15_000), [1], 'shown, with its box, once asked again');
    t.same([...asked.values()], [2], 'asked twice');
    await page.unrouteAll({ behavior: 'wait' });
  });

  await t.test('a stored key the store refuses brings the form back', async (t) => {
    await page.evaluate(() => localStorage.setItem('edge-event-store.api_key', 'an-old-key'));
    await page.reload();
    await page.locator('#key-form').waitFor({ state: 'visible' });
    t.ok(await page.locator('#key-refused').isVisible(), 'says the key was refused');
    t.equal(await page.locator('#connection').getAttribute('data-state'), 'no key');
  });

  t.same(pageErrors, [], 'no script error on the page');
  t.same(failedRequests.filter((url) => !url.includes('/v2/events/stream')), [], 'no request failed (a stream ends by design)');
});

t.test('with MQTT_URL set, the page shows whether the store publishes', async (t) => {
  const broker = await startBroker();
  t.teardown(() => broker.stop());
  const store = await startStore({ MQTT_URL: broker.url });
  t.teardown(store.stop);
  const page = await newPage(t, { viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(10_000);
  await page.clock.install();
  await page.goto(`${store.url}/`);
  await page.locator('#connection[data-state="live"]').waitFor();
  t.notOk(await page.locator('#key-form').isVisible(), 'no API_KEY: no key asked for');
  const created = await postJson(`${store.url}/v2/events`, event('cam-9', [image('cat.jpg', [CAT_BOX])]));
  t.equal(created.status, 201);

  const card = page.locator('#mqtt');
  const published = await untilStatsShow(page, 'the MQTT card to show a publish', async () => {
    const note = (await card.isVisible()) ? await card.locator('.note').innerText() : '';
    return note.startsWith('1 published') && note;
  });
  t.match(published, /^1 published; nothing waiting/, 'the created event published, none waiting');
  t.equal(await card.locator('.figure').innerText(), 'connected');
  t.equal((await getJson(`${store.url}/stats`)).body.mqtt.published_total, 1, 'as /stats says');

  await broker.stop();
  t.equal(await untilStatsShow(page, 'the MQTT card to show the broker gone', async () => {
    const figure = await card.locator('.figure').innerText();
    return figure === 'disconnected' && figure;
  }), 'disconnected', 'the broker gone: disconnected');
  t.ok(await card.evaluate((element) => element.classList.contains('alarm')), 'marked as an alarm');
});

t.test('with NATS_SOURCE_URL set, the page shows the hub\'s pending messages and lag', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const { event: shipped } = await deviceWithOneEvent(t, server);
  const hub = await startStore({ NATS_SOURCE_URL: server.url });
  t.teardown(hub.stop);
  const page = await newPage(t, { viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(10_000);
  await page.clock.install();
  await page.goto(`${hub.url}/`);

  const card = page.locator('#hub');
  const shown = async () => (await card.isVisible()) && { figure: await card.locator('.figure').innerText(), note: await card.locator('.note').innerText() };
  const caughtUp = await untilStatsShow(page, 'the hub card to show the imported event, caught up', async () => {
    const seen = await shown();
    return seen && seen.figure === '0 pending' && seen.note.endsWith('; 1 imported') && seen;
  });
  t.match(caughtUp.note, /^lag 0 s; newest imported [^;]+; 1 imported$/, 'no lag; the newest message imported');

  const nc = await connect({ servers: server.urls });
  t.teardown(() => nc.close());
  await publishAwaitingImage(nc, shipped); // its image never comes
  const behind = await untilStatsShow(page, 'the hub card to show a message pending and a lag', async () => {
    const seen = await shown();
    return seen && seen.figure === '1 pending' && !seen.note.startsWith('lag 0 s') && seen;
  });
  t.match(behind.note, /^lag \d+ s; newest imported [^;]+; 1 imported$/, `a lag, in seconds (${behind.note})`);
  t.ok((await getJson(`${hub.url}/stats`)).body.hub.lag_seconds > 0, '/stats: a lag');
});
