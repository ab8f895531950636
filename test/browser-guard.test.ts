/** The browser guard's rules over a table of requests (src/http/browser-guard.ts). */
import t from 'tap';
import { createBrowserGuard, hostName, jsonContentTypeProblem, type GuardedHeaders } from '../src/http/browser-guard.js';

const guard = createBrowserGuard({ allowedHosts: ['events.plant.example'], corsAllowedOrigins: ['http://dashboard:3000'] }, 'edge-box-7');
const headers = (extra: Partial<GuardedHeaders>): GuardedHeaders => ({ host: '192.168.1.20:8001', origin: '', fetchSite: '', ...extra });
const post = { changesState: true };
const cleanup = post;
const get = { changesState: false };

t.test('host names: port stripped, case folded, IPv6 brackets kept', async (t) => {
  t.equal(hostName('Edge-Box-7:8001'), 'edge-box-7');
  t.equal(hostName('[::1]:8001'), '[::1]');
  t.equal(hostName('[fe80::1%eth0]'), '[fe80::1%eth0]');
  t.equal(hostName('localhost'), 'localhost');
});

t.test('producers are never refused for their Host', async (t) => {
  for (const host of ['event-store:8001', 'attacker.example', 'storage.internal', '']) {
    t.equal(guard(headers({ host }), post), undefined, host);
  }
});

t.test('a browser must use one of the store\'s names (DNS rebinding): 421 otherwise', async (t) => {
  const allowed = ['192.168.1.20:8001', '127.0.0.1:8001', '[::1]:8001', 'localhost:8001', 'edge-box-7:8001', 'EDGE-BOX-7.local:8001', 'events.plant.example', 'app.localhost:8001'];
  for (const host of allowed) t.equal(guard(headers({ host, fetchSite: 'same-origin' }), get), undefined, host);
  for (const host of ['rebind.attacker.example:8001', 'edge-box-7.attacker.example', 'localhost.attacker.example', '1.2.3.4.nip.io:8001']) {
    t.equal(guard(headers({ host, fetchSite: 'none' }), get)?.status, 421, `${host} (Sec-Fetch-Site)`);
    t.equal(guard(headers({ host, origin: `http://${host}` }), get)?.status, 421, `${host} (Origin)`);
  }
});

t.test('the operator page is served under the store\'s names only, whoever asks (a navigation over HTTP has no browser header)', async (t) => {
  const page = { changesState: false, forBrowsers: true };
  const refused = guard(headers({ host: 'store.lan:8001' }), page);
  t.equal(refused?.status, 421, 'no Origin, no Sec-Fetch-Site: still refused');
  t.match(refused?.message, 'Host "store.lan:8001" is not a name of this store: add "store.lan" to ALLOWED_HOSTS', 'names the host without its port, and the setting');
  t.equal(guard(headers({ host: 'events.plant.example:8001' }), page), undefined, 'a listed name');
  t.equal(guard(headers({ host: '192.168.1.20:8001' }), page), undefined, 'an IP literal');
  t.equal(guard(headers({ host: 'store.lan:8001' }), get), undefined, 'another route without browser headers: a producer');
});

t.test('another origin may not change the store (403), unless listed; it may read', async (t) => {
  const cross = headers({ origin: 'http://evil.example', fetchSite: 'cross-site' });
  t.equal(guard(cross, post)?.status, 403, 'a POST');
  t.equal(guard(cross, get), undefined, 'a read is left to the browser\'s same-origin policy');
  t.equal(guard(headers({ origin: 'http://192.168.1.20:8001', fetchSite: 'same-origin' }), post), undefined, 'the store\'s own origin');
  t.equal(guard(headers({ origin: 'http://dashboard:3000', fetchSite: 'cross-site' }), post), undefined, 'a listed origin');
  t.equal(guard(headers({ origin: 'http://dashboard:3001', fetchSite: 'cross-site' }), post)?.status, 403, 'a port makes another origin');
  t.equal(guard(headers({ origin: 'null', fetchSite: 'cross-site' }), cleanup)?.status, 403, 'an opaque origin');
});

t.test('a JSON route takes application/json only (415): text/plain is how a page posts JSON without a preflight', async (t) => {
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '', 'application/jsonx']) {
    t.equal(jsonContentTypeProblem(type)?.status, 415, JSON.stringify(type));
  }
  for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON']) {
    t.equal(jsonContentTypeProblem(type), undefined, type);
  }
});
