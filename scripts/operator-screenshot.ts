/**
 * `npm run screenshot`: the picture of the operator page in docs/USAGE.md ("The operator page").
 *
 * Starts a store in a temporary data directory (port 0, no key), opens `/` in Debian's Chromium
 * (scripts/lib/browser.ts) at 1280x800, posts a few events made from the JPEGs of test/fixtures
 * with detections, from three devices, while the page watches, runs a cleanup, waits until every
 * thumbnail shows its boxes, and writes `docs/operator-page.png`. Exits 1 when something fails.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.js';
import { packageRoot } from '../src/paths.js';
import { startService } from '../src/serve.js';
import { launchChromium } from './lib/browser.js';
import { fixtureBase64 } from './lib/fixtures.js';

const OUTPUT = path.join(packageRoot, 'docs', 'operator-page.png');
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

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-screenshot-'));
const service = await startService(loadConfig({
  HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', DATA_DIR: dataDir, MAX_RECORDS: '1000', MAX_STORAGE_BYTES: String(8 * 1024 * 1024), RETENTION_DAYS: '7',
}));
const url = `http://127.0.0.1:${service.port}`;
const browser = await launchChromium();
let failed = false;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${url}/`);
  await page.locator('#connection[data-state="live"]').waitFor();
  for (const [i, event] of EVENTS.entries()) {
    await post(url, '/v2/events', { inferenceTimestamp: new Date().toISOString(), ...event });
    if (i === 2) await post(url, '/admin/cleanup');
    await sleep(400);
  }
  const boxes = EVENTS.flatMap((event) => event.images.flatMap((entry) => entry.objectDetections)).length;
  await page.waitForFunction((count) => document.querySelectorAll('#events .box').length === count, boxes);
  // The next /stats read (every 5 s) counts them all.
  await page.waitForFunction((count) => document.querySelector('#gauge-records .gauge-value')?.textContent?.includes(` ${count} of `), EVENTS.length, { timeout: 10_000 });
  await page.screenshot({ path: OUTPUT });
  console.log(`operator-screenshot: wrote ${path.relative(packageRoot, OUTPUT)} (${EVENTS.length} events, ${boxes} boxes)`);
} catch (err) {
  failed = true;
  console.error(`operator-screenshot: FAILED: ${(err as Error).stack}`);
} finally {
  await browser.close();
  await service.stop(1000);
  fs.rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
