/**
 * `npm run screenshot`: the pictures of the operator page in docs/USAGE.md ("The operator page").
 *
 * Starts a store in a temporary data directory (port 0, no key), opens `/` in Debian's Chromium
 * (scripts/lib/browser.ts) at 1280x800, posts a few events made from the JPEGs of test/fixtures
 * with detections, from three devices, while the page watches, runs a cleanup, waits until every
 * thumbnail shows its boxes, and writes `docs/operator-page.png`.
 *
 * `npm run screenshot -- --hub` makes the hub's picture instead, `docs/operator-page-hub.png`
 * (docs/OPERATIONS.md, "Hub mode"): it starts a real `nats-server -js` in the temporary folder
 * (scripts/lib/nats-server.ts), a device store shipping to it through its JetStream sink
 * (NATS_URL) and a hub store consuming the stream (NATS_SOURCE_URL), posts the same events to the
 * device, and shoots the hub's page once it shows every event with its boxes and its hub card
 * reads the consumer's pending messages, a known lag and every event imported.
 *
 * Exits 1 when something fails.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { loadConfig } from '../src/config.js';
import { packageRoot } from '../src/paths.js';
import { startService } from '../src/serve.js';
import { flagOption } from './lib/args.js';
import { launchChromium } from './lib/browser.js';
import { fixtureBase64 } from './lib/fixtures.js';
import { startNatsServer } from './lib/nats-server.js';

const hub = flagOption('hub');
const OUTPUT = path.join(packageRoot, 'docs', hub ? 'operator-page-hub.png' : 'operator-page.png');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const box = (name: string, x: number, y: number, width: number, height: number, confidence: number) => ({ class: name, x, y, width, height, confidence });
const image = (file: string, label: string, detections: ReturnType<typeof box>[]) => ({ label, base64Image: fixtureBase64(file), objectDetections: detections });

/** The events posted, oldest first: what a small line of cameras might send in a few seconds. */
const EVENTS = [
  { deviceId: 'dock-2', eventSchema: 'inventory_count', eventData: { location: 'bay 4', itemCount: 1, itemType: 'rocket' }, images: [image('rocket.jpg', 'bay', [box('rocket', 318, 220, 96, 380, 0.94)])] },
  { deviceId: 'cam-1', eventSchema: 'quality_check', eventData: { result: 'pass', externalId: 'lot-41' }, images: [image('camera.jpg', 'top', [box('person', 250, 230, 200, 400, 0.91), box('tripod', 300, 420, 150, 170, 0.67)])] },
  { deviceId: 'gate-3', eventSchema: 'safety_alert', eventData: { alertType: 'animal on line', severity: 'medium' }, images: [image('cat.jpg', 'gate', [box('cat', 230, 160, 270, 260, 0.97)])] },
  { deviceId: 'cam-1', eventSchema: 'quality_check', eventData: { result: 'fail', externalId: 'lot-42' }, images: [image('cat.jpg', 'top', [box('cat', 230, 160, 270, 260, 0.93), box('ear', 150, 58, 60, 52, 0.72)]), image('camera.jpg', 'side', [box('person', 250, 230, 200, 400, 0.88)])] },
  { deviceId: 'dock-2', eventSchema: 'inventory_count', eventData: { location: 'bay 5', itemCount: 0 }, images: [image('rocket.jpg', 'bay', [])] },
  { deviceId: 'cam-1', eventSchema: 'quality_check', eventData: { result: 'pass', externalId: 'lot-43' }, images: [image('cat.jpg', 'top', [box('cat', 228, 158, 266, 256, 0.95)])] },
];

async function post(url: string, route: string, body?: unknown): Promise<unknown> {
  const answer = await fetch(url + route, {
    method: 'POST',
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!answer.ok) throw new Error(`POST ${route} answered ${answer.status}: ${await answer.text()}`);
  return answer.json();
}

/** What is undone at the end, last first. */
const undo: Array<() => unknown> = [];
const tempDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-screenshot-'));
undo.push(() => fs.rmSync(tempDir, { recursive: true, force: true }));

/** Starts a store in its own folder of `tempDir`, with `settings` beyond the small bounds below; answers its URL. */
async function startStore(name: string, settings: Record<string, string> = {}): Promise<string> {
  const service = await startService(loadConfig({
    HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', DATA_DIR: path.join(tempDir, name), MAX_RECORDS: '1000', MAX_STORAGE_BYTES: String(8 * 1024 * 1024), RETENTION_DAYS: '7', ...settings,
  }));
  undo.push(() => service.stop(1000));
  return `http://127.0.0.1:${service.port}`;
}

/** The stores: the page's, and the one the events are posted to (the same one, or the hub's device). */
async function startStores(): Promise<{ pageUrl: string; postUrl: string }> {
  if (!hub) {
    const url = await startStore('store');
    return { pageUrl: url, postUrl: url };
  }
  const nats = await startNatsServer(path.join(tempDir, 'nats'));
  undo.push(() => nats.stop());
  const postUrl = await startStore('device', { NATS_URL: nats.url });
  // LOG_LEVEL error: until the device's first shipment creates the stream, the hub warns that it waits for it.
  return { pageUrl: await startStore('hub', { NATS_SOURCE_URL: nats.url, LOG_LEVEL: 'error' }), postUrl };
}

/** Waits until the hub card (page/stats-panel.ts, `renderHub`) reads pending messages, a lag and `count` imported. */
async function hubCardFilled(page: Page, count: number): Promise<void> {
  await page.waitForFunction((imported) => {
    const card = document.querySelector<HTMLElement>('#hub');
    const figure = card?.querySelector('.figure')?.textContent ?? '';
    const note = card?.querySelector('.note')?.textContent ?? '';
    return card && !card.hidden && /^[\d,]+ pending$/.test(figure) && /^lag \d/.test(note) && note.includes(`; ${imported} imported`);
  }, count, { timeout: 30_000 });
}

let failed = false;
try {
  const { pageUrl, postUrl } = await startStores();
  const browser = await launchChromium();
  undo.push(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${pageUrl}/`);
  await page.locator('#connection[data-state="live"]').waitFor();
  for (const [i, event] of EVENTS.entries()) {
    await post(postUrl, '/v2/events', { inferenceTimestamp: new Date().toISOString(), ...event });
    if (i === 2) await post(pageUrl, '/admin/cleanup');
    await sleep(400);
  }
  const boxes = EVENTS.flatMap((event) => event.images.flatMap((entry) => entry.objectDetections)).length;
  await page.waitForFunction((count) => document.querySelectorAll('#events .box').length === count, boxes, { timeout: 30_000 });
  // The next /stats read (every 5 s) counts them all.
  await page.waitForFunction((count) => document.querySelector('#gauge-records .gauge-value')?.textContent?.includes(` ${count} of `), EVENTS.length, { timeout: 10_000 });
  if (hub) await hubCardFilled(page, EVENTS.length);
  await page.screenshot({ path: OUTPUT });
  console.log(`operator-screenshot: wrote ${path.relative(packageRoot, OUTPUT)} (${EVENTS.length} events, ${boxes} boxes)`);
} catch (err) {
  failed = true;
  console.error(`operator-screenshot: FAILED: ${(err as Error).stack}`);
} finally {
  for (const step of undo.reverse()) await step();
}
process.exit(failed ? 1 : 0);
