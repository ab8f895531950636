/**
 * The interactive docs in a real browser (docs/API.md, "Authentication"): with API_KEY set,
 * /docs opens without the key, and Swagger UI's "Authorize" with the X-API-Key scheme makes
 * "Try it out" calls succeed. Debian's Chromium, driven by playwright-core (scripts/lib/browser.ts).
 */
import t from 'tap';
import { launchBrowser } from './support/browser.js';
import { startStore } from './support/store-server.js';

const KEY = 'docs-key-5e1c';

t.test('Swagger UI opens without the key and its Authorize button makes calls with X-API-Key', async (t) => {
  const store = await startStore({ API_KEY: KEY });
  t.teardown(store.stop);
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const statuses: number[] = [];
  page.on('response', (response) => {
    if (response.url().endsWith('/stats')) statuses.push(response.status());
  });
  const opened = await page.goto(`${store.url}/docs`);
  t.equal(opened?.status(), 200);
  const stats = page.locator('#operations-admin-getStats');
  await stats.locator('.opblock-summary').click();
  await stats.locator('button.try-out__btn').click();

  const status = stats.locator('.live-responses-table tbody .response-col_status').first();
  await stats.locator('button.execute').click();
  await status.waitFor();
  t.match(await status.innerText(), /401/, 'before Authorize: 401');

  await page.locator('.scheme-container button.authorize').click();
  const scheme = page.locator('.auth-container').filter({ hasText: 'X-API-Key' }).first();
  await scheme.locator('input').fill(KEY);
  await scheme.locator('button.authorize').click();
  await page.locator('.auth-btn-wrapper button.btn-done').first().click();

  await stats.locator('button.execute').click();
  await page.waitForFunction(() => /200/.test(document.querySelector('#operations-admin-getStats .live-responses-table tbody .response-col_status')?.textContent ?? ''));
  t.match(await status.innerText(), /200/, 'after Authorize: 200');
  t.match(await stats.locator('.live-responses-table .microlight').first().innerText(), /total_events/);
  t.same(statuses, [401, 200], 'the browser sent the key only after Authorize');
});
