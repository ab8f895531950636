/**
 * Stored files in a real browser (docs/SECURITY.md, "A device on the LAN"): a file a device
 * uploads never runs as the store's origin, where it could read events and the operator's key
 * from localStorage. Replays the probe of #31 item 2 in Debian's Chromium (playwright-core): the
 * listed content type that Chromium read as text/html is refused at upload; an HTML or SVG page
 * downloads instead of opening; HTML bytes declared as a passive type (text/plain, image/png)
 * are not sniffed into a page, and the document is sandboxed, so its script does not run.
 */
import t from 'tap';
import { launchBrowser } from './support/browser.js';
import { postJson, smallEvent } from './support/events.js';
import { postFile } from './support/multipart.js';
import { startStore } from './support/store-server.js';

/** Sets `window.pwned` and reads the operator's key, as the probe's upload did. */
const SCRIPT = '<script>window.pwned = localStorage.getItem("edge-event-store.api_key") ?? "ran"; document.title = "pwned";</script>';

t.test('an uploaded page never runs as the store\'s origin in Chromium', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const draft = (await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }))).body;
  const upload = (contentType: string, bytes: string) => postFile(`${store.url}/v2/events/${draft.id}/local-only-files`, Buffer.from(bytes), { content_type: contentType }, 'application/octet-stream');

  const listed = await upload('image/png; a="x\\"; b=", text/html; c="', `<!doctype html>${SCRIPT}`);
  t.equal(listed.status, 422, 'the listed type Chromium ran as text/html is refused at upload');

  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const context = await browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  await page.goto(`${store.url}/`);
  await page.evaluate(() => localStorage.setItem('edge-event-store.api_key', 'operator-secret'));

  for (const [contentType, bytes] of [['text/html', `<!doctype html>${SCRIPT}`], ['image/svg+xml', `<svg xmlns="http://www.w3.org/2000/svg"><script>document.title = "pwned"</script></svg>`]]) {
    const { body } = await upload(contentType, bytes);
    const url = `${store.url}/local-only-files/${body.file_id}`;
    const [download] = await Promise.all([page.waitForEvent('download'), page.goto(url).catch(() => undefined)]);
    t.equal(download.url(), url, `${contentType}: Chromium downloads it`);
    t.equal(page.url(), `${store.url}/`, `${contentType}: the page stays where it was`);
    t.not(await page.title(), 'pwned');
  }

  for (const contentType of ['text/plain', 'image/png']) {
    const { body } = await upload(contentType, `<!doctype html>${SCRIPT}`);
    const opened = await page.goto(`${store.url}/local-only-files/${body.file_id}`);
    t.equal(opened?.status(), 200, `${contentType}: shown inline`);
    t.equal(await page.evaluate(() => (window as unknown as { pwned?: string }).pwned), undefined, `${contentType}: its script did not run`);
    t.not(await page.title(), 'pwned');
    t.equal(await page.evaluate(() => window.origin), 'null', `${contentType}: the document is sandboxed into an opaque origin`);
  }
});
