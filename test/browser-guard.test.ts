/** The browser guard's rules over a table of requests (src/http/browser-guard.ts). */
import type os from 'node:os';
import t from 'tap';
import { allowedHostNames, createBrowserGuard, createHostCheck, hostName, jsonContentTypeProblem, parseHost, type GuardedHeaders, type MachineNames } from '../src/http/browser-guard.js';

/** An interface's address as os.networkInterfaces() lists it. */
const address = (ip: string, family: 'IPv4' | 'IPv6'): os.NetworkInterfaceInfo => (family === 'IPv4'
  ? { address: ip, family, netmask: '255.255.255.0', mac: '02:00:00:00:00:07', internal: false, cidr: `${ip}/24` }
  : { address: ip, family, netmask: 'ffff:ffff:ffff:ffff::', mac: '02:00:00:00:00:07', internal: false, cidr: `${ip}/64`, scopeid: 0 });
const machine: MachineNames = {
  hostname: 'Edge-Box-7',
  interfaces: { lo: [address('127.0.0.1', 'IPv4'), address('::1', 'IPv6')], eth0: [address('192.168.1.20', 'IPv4'), address('fd00::7', 'IPv6')] },
};
const guard = createBrowserGuard({ corsAllowedOrigins: ['http://dashboard:3000'] });
const checkHost = createHostCheck(['events.plant.example'], machine);
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

t.test('the default names: localhost, the hostname, <hostname>.local and the machine\'s addresses; ALLOWED_HOSTS adds to them', async (t) => {
  t.same(allowedHostNames([], machine), ['localhost', 'edge-box-7', 'edge-box-7.local', '127.0.0.1', '[::1]', '192.168.1.20', '[fd00::7]'], 'a LAN box needs no setting');
  t.same(allowedHostNames(['Events.Plant.Example', 'store.lan:8001'], machine).slice(-2), ['events.plant.example', 'store.lan'], 'listed names, lower-cased, without a port');
});

t.test('a Host is host[:port] as RFC 9110 spells it, or it is malformed', async (t) => {
  const parsed: [string, string, string][] = [
    ['localhost', 'localhost', ''], ['LocalHost:8001', 'localhost', '8001'], ['192.168.1.20:8001', '192.168.1.20', '8001'],
    ['[::1]:8001', '[::1]', '8001'], ['[FD00::7]', '[fd00::7]', ''], ['[fe80::1%eth0]', '[fe80::1%eth0]', ''], ['localhost:', 'localhost', ''],
    [' event-store:8001 ', 'event-store', '8001'], ['xn--bcher-kva.example', 'xn--bcher-kva.example', ''], ['my_box.lan', 'my_box.lan', ''],
  ];
  for (const [host, name, port] of parsed) t.same(parseHost(host), { name, port }, JSON.stringify(host));
  const malformed = ['', ' ', 'localhost:evil', 'localhost:80:80', '[::1]evil.example', '[::1]:80x', '[evil.example', '[evil.example]', '[::1', '::1',
    'user@localhost', 'local host', 'localhost, evil.example', 'localhost/path', 'a%zz', ':8001', 'localhost\t:8001'];
  for (const host of malformed) t.equal(parseHost(host), undefined, JSON.stringify(host));
});

t.test('the Host check: a malformed Host answers 400, a DNS name not the store\'s 421, whoever asks', async (t) => {
  const allowed = ['192.168.1.20:8001', '10.9.8.7:8001', '127.0.0.1:8001', '[::1]:8001', '[fd00::7]:8001', 'localhost:8001', 'edge-box-7:8001', 'EDGE-BOX-7.local:8001', 'events.plant.example', 'app.localhost:8001'];
  const rebound = ['evil.test:18221', 'rebind.attacker.example:8001', 'edge-box-7.attacker.example', 'localhost.attacker.example', '1.2.3.4.nip.io:8001', 'event-store:8001', 'store.lan', '999.1.2.3'];
  for (const host of allowed) t.equal(checkHost(host), undefined, `${JSON.stringify(host)}: allowed`);
  for (const host of rebound) t.equal(checkHost(host)?.status, 421, `${host}: refused 421`);
  for (const host of ['', 'localhost:evil', '[::1]evil.example', '[evil.example', 'localhost, evil.example']) {
    t.match(checkHost(host), { status: 400, code: 'malformed_host' }, `${JSON.stringify(host)}: refused 400`);
  }
  t.match(checkHost('')?.message, 'The request has no Host, or an empty one', 'says the Host is missing');
  t.match(checkHost('localhost:evil')?.message, 'Host "localhost:evil" is not host[:port]', 'names the Host it saw');
  const refused = checkHost('store.lan:8001');
  t.match(refused?.message, 'Host "store.lan:8001" is not a name of this store: add "store.lan" to ALLOWED_HOSTS', 'names the host without its port, and the setting');
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
