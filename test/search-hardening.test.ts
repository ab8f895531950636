/**
 * Hardening of the search tools (docs/RELIABILITY.md, "Security"), each test replaying the input
 * that once went wrong: queries nested or long enough to overflow the parser's stack (proxy, CLI
 * and MCP), a hosted key that came back unmasked in an encoded form, a header or the reason
 * phrase, and export archives that overwrote themselves or were left half extracted.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import t from 'tap';
import { packageRoot } from '../src/paths.js';
import { QuerySyntaxError } from '../src/query-language/query-syntax-error.js';
import { createSearchMcpServer } from '../src/mcp/mcp-server.js';
import { SecretMasker } from '../src/search/proxy-forward.js';
import { MAX_QUERY_DEPTH, MAX_QUERY_LENGTH, parseQuery } from '../src/query-language/query-parser.js';
import { redact } from '../src/redact.js';
import { runSearchCli } from '../src/search/search-command.js';
import { extractZip } from '../src/search/zip-extract.js';
import { SearchSimulator, storedZip, WORKSPACE } from './support/search-simulator.js';
import { spawnStore } from '../scripts/lib/spawned-store.js';
import { startStore, tempDataDir } from './support/store-server.js';

/** The three queries of the report, each once a 500 "Maximum call stack size exceeded". */
const OVERFLOWING: [string, string][] = [
  ['20,000 parentheses', `${'('.repeat(20_000)}a${')'.repeat(20_000)}`],
  ['"NOT " x 12,000', `${'NOT '.repeat(12_000)}a`],
  ['"-" x 30,000', `${'-'.repeat(30_000)}a`],
];

/** A hosted stand-in answering every request with `answer`; records what it was sent. */
async function startStub(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push(req.url ?? '');
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

/** POSTs JSON with node:http, to see the reason phrase as sent. */
function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; reason: string; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reason: res.statusMessage ?? '', headers: res.headers, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

t.test('the parser refuses too long or too deep queries with a position, never overflowing the stack', async (t) => {
  for (const [name, query] of OVERFLOWING) {
    const error = t.throws(() => parseQuery(query), QuerySyntaxError, name) as QuerySyntaxError;
    t.equal(error.position, MAX_QUERY_LENGTH, `${name}: points at the first character past ${MAX_QUERY_LENGTH}`);
    t.match(error.message, new RegExp(`^Invalid query at column ${MAX_QUERY_LENGTH + 1}: The query is longer than ${MAX_QUERY_LENGTH} characters`));
    t.ok(error.message.length < 300, `${name}: the message quotes a window of the query (${error.message.length} characters)`);
  }
  const levels = (n: number, opener: string, closer = '') => `${opener.repeat(n)}tag:a${closer.repeat(n)}`;
  for (const [name, open, close, width] of [['parentheses', '(', ')', 1], ['NOT', 'NOT ', '', 4], ['minus', '-', '', 1]] as const) {
    t.doesNotThrow(() => parseQuery(levels(MAX_QUERY_DEPTH, open, close)), `${name}: ${MAX_QUERY_DEPTH} levels parse`);
    const error = t.throws(() => parseQuery(levels(MAX_QUERY_DEPTH + 1, open, close)), QuerySyntaxError) as QuerySyntaxError;
    t.equal(error.position, MAX_QUERY_DEPTH * width, `${name}: points at the opener of level ${MAX_QUERY_DEPTH + 1}`);
    t.match(error.reason, `Nested more than ${MAX_QUERY_DEPTH} levels deep`);
  }
  const mixed = `${'(NOT -'.repeat(30)}tag:a${')'.repeat(30)}`;
  const mixedError = t.throws(() => parseQuery(mixed), QuerySyntaxError) as QuerySyntaxError;
  t.same([mixedError.position, mixed.slice(mixedError.position, mixedError.position + 3)], [127, 'NOT'], 'every kind of level counts: level 65 is the 22nd NOT');

  const long = `${'tag:a '.repeat(30)}min-width:wide ${'tag:b '.repeat(30)}`;
  const [, queryLine, caretLine] = (t.throws(() => parseQuery(long)) as QuerySyntaxError).message.split('\n');
  t.equal(caretLine.indexOf('^') - 2, queryLine.slice(2).indexOf('wide'), 'the caret stays under the bad value in a windowed query');
  t.ok(queryLine.startsWith('  ...') && queryLine.endsWith('...'), 'the window says where text was left out');
});

t.test('the proxy answers such queries 400 with the position, without a hosted call', async (t) => {
  const stub = await startStub((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"results":[]}'));
  const store = await startStore({ API_KEY: 'device-key', SEARCH_BASE_URL: stub.baseUrl, SEARCH_API_KEY: 'hosted-key', SEARCH_WORKSPACE: 'ws' });
  t.teardown(store.stop);
  for (const [name, query] of [...OVERFLOWING, ['65 parentheses', `${'('.repeat(65)}a${')'.repeat(65)}`]]) {
    const answer = await post(`${store.url}/ws/search/v1`, { query }, { 'x-api-key': 'device-key' });
    t.equal(answer.status, 400, name);
    t.match(JSON.parse(answer.text), { error: /^Invalid query at column \d+: / }, `${name}: the hosted-shaped error names the column`);
  }
  t.same(stub.requests, [], 'nothing reached the hosted API');
  t.equal((await post(`${store.url}/ws/search/v1`, { query: 'tag:a' }, { 'x-api-key': 'device-key' })).status, 200, 'a sane query still goes through');
});

t.test('the CLI and the MCP tool report such queries as query errors, exit 1 / tool error', async (t) => {
  const sim = await SearchSimulator.start();
  t.teardown(() => sim.close());
  const env = { SEARCH_BASE_URL: sim.baseUrl, SEARCH_API_KEY: sim.apiKey, SEARCH_WORKSPACE: WORKSPACE };
  const server = createSearchMcpServer({ flags: {}, env, client: { sleep: async () => {}, retry: { retries: 0 } } });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client({ name: 'search-hardening-test', version: '1.0.0' });
  await client.connect(clientTransport);
  t.teardown(() => client.close());

  for (const [name, query] of [...OVERFLOWING, ['65 x NOT', `${'NOT '.repeat(65)}tag:a`]]) {
    let stderr = '';
    const code = await runSearchCli(['--json', '--', query], {
      stdout: { write: () => true },
      stderr: { write: (text: string) => (stderr += text), isTTY: false },
      env,
      client: { sleep: async () => {}, retry: { retries: 0 } },
    });
    t.equal(code, 1, `CLI ${name}: exit 1`);
    t.match(JSON.parse(stderr).error, { message: /^Invalid query at column \d+: /, hint: /Fix the query at the caret/ }, `CLI ${name}: a query error`);

    const result = await client.callTool({ name: 'images_workspace_search', arguments: { query } });
    const text = (result.content as { text: string }[])[0].text;
    t.equal(result.isError, true, `MCP ${name}: a tool error`);
    t.match(text, /^Invalid query at column \d+: [^\n]+\n.*\n.*\^\nHint: Fix the query/s, `MCP ${name}: the message with its caret`);
    t.notMatch(text, /call stack/);
  }
  t.equal(sim.requests.length, 0, 'nothing reached the hosted API');
});

/** A key with every character that encodes differently from one rule to another. */
const KEY = "k(e)y!'* hosted-secret~";

/** Every form of KEY a hosted answer was seen, or could be expected, to echo. */
function keyForms(key: string): Record<string, string> {
  const bytes = Buffer.from(key);
  return {
    raw: key,
    encodeURIComponent: encodeURIComponent(key),
    encodeURI: encodeURI(key),
    URLSearchParams: new URLSearchParams({ k: key }).toString().slice(2),
    'lower-case percent': encodeURIComponent(key).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    'every byte percent-encoded': [...bytes].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join(''),
    'plus for space, RFC 3986 unreserved kept': encodeURIComponent(key).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/%20/g, '+'),
    'JSON \\u escapes': Array.from({ length: key.length }, (_, i) => `\\u${key.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''),
    'HTML references': [...key].map((c) => `&#${c.codePointAt(0)};`).join(''),
    base64: bytes.toString('base64'),
    base64url: bytes.toString('base64url'),
  };
}

t.test('redact and SecretMasker mask every encoding of the key, whole and split across chunks', async (t) => {
  for (const key of [KEY, 'clé "ünïcode" \\ 🔑 key/x']) {
    const forms = keyForms(key);
    for (const [name, form] of Object.entries(forms)) {
      t.equal(redact(`before ${form} after`, key), 'before *** after', `redact: ${name}`);
      const text = `x${form}y${form}z`;
      for (const size of [1, 2, 7, text.length]) {
        const masker = new SecretMasker([key]);
        const bytes = Buffer.from(text);
        let out = '';
        for (let i = 0; i < bytes.length; i += size) out += masker.push(bytes.subarray(i, i + size)).toString('latin1');
        out += masker.flush().toString('latin1');
        t.equal(Buffer.from(out, 'latin1').toString(), 'x***y***z', `SecretMasker, ${name}, chunks of ${size}`);
      }
    }
    t.equal(redact(JSON.stringify({ echo: key }), key), '{"echo":"***"}', 'JSON-escaped in a JSON body');
    t.equal(redact(Buffer.from(key).toString('latin1'), key), '***', 'UTF-8 bytes read as Latin-1 (a header value)');
  }
  t.equal(redact('k(e)y!\' hosted-secre', KEY), 'k(e)y!\' hosted-secre', 'a part of the key is left alone');
  t.equal(redact('?api_key=whatever&x=1', KEY), '?api_key=***&x=1');
});

t.test('a proxied answer carries the key in no form: body, Retry-After, RateLimit-*, Content-Type, reason phrase, log', async (t) => {
  const forms = keyForms(KEY);
  const echo = Object.entries(forms).map(([name, form]) => `${name}=${form}`).join('\n');
  let answerWith: 'echo' | 'reset' = 'echo';
  const stub = await startStub((req, res) => {
    if (answerWith === 'reset') {
      req.socket.destroy();
      return;
    }
    res.writeHead(418, `key ${KEY}`, {
      'content-type': `application/json; profile="${forms.encodeURIComponent}"`,
      'retry-after': forms.URLSearchParams,
      'ratelimit-limit': forms.raw,
      'ratelimit-remaining': forms.base64,
      'ratelimit-reset': forms['lower-case percent'],
    });
    // Plain lines, as an error page would echo them; the last form split over two writes.
    res.write(`url=${req.url}\n${echo}\nsplit=${forms.encodeURIComponent.slice(0, 9)}`);
    setTimeout(() => res.end(forms.encodeURIComponent.slice(9)), 20);
  });
  const store = await spawnStore({
    PORT: '0', DATA_DIR: tempDataDir(), LOG_LEVEL: 'debug', API_KEY: 'device-key',
    SEARCH_BASE_URL: stub.baseUrl, SEARCH_API_KEY: KEY, SEARCH_WORKSPACE: 'ws',
  });
  t.teardown(() => store.child.kill('SIGKILL'));

  const answer = await post(`${store.url}/ws/search/v1`, { query: 'tag:a' }, { 'x-api-key': 'device-key' });
  t.equal(answer.status, 418, 'the hosted status passes through');
  t.equal(stub.requests.length, 1);
  t.ok(stub.requests[0].includes(`api_key=${forms.URLSearchParams}`), 'the hosted API got the key (URLSearchParams-encoded)');
  t.equal(answer.reason, 'key ***', 'reason phrase masked');
  t.same(
    [answer.headers['content-type'], answer.headers['retry-after'], answer.headers['ratelimit-limit'], answer.headers['ratelimit-remaining'], answer.headers['ratelimit-reset']],
    ['application/json; profile="***"', '***', '***', '***', '***'],
    'every forwarded header masked',
  );
  const lines = answer.text.split('\n');
  t.equal(lines[0], 'url=/ws/search/v1?api_key=***', 'the echoed request URL');
  t.same(lines.slice(1, -1), Object.keys(forms).map((name) => `${name}=***`), 'every encoding in the body masked');
  t.equal(lines.at(-1), 'split=***', 'masked across chunks');
  const everything = [answer.reason, JSON.stringify(answer.headers), answer.text].join('\n');
  for (const [name, form] of Object.entries(forms)) t.notOk(everything.includes(form), `no ${name} form reached the client`);

  answerWith = 'reset';
  const broken = await post(`${store.url}/ws/search/v1`, { query: 'tag:a' }, { 'x-api-key': 'device-key' });
  t.equal(broken.status, 502);
  t.notOk(Object.values(forms).some((form) => broken.text.includes(form)), 'the 502 detail names no key');

  // Stopped (SIGTERM, graceful), so every buffered log line is out.
  const exited = new Promise((resolve) => store.child.once('exit', resolve));
  store.child.kill('SIGTERM');
  await exited;
  const log = store.output();
  t.match(log, /search proxied/, 'the proxied request was logged (debug)');
  t.match(log, /"level":50/, 'the 502 was logged as an error');
  for (const [name, form] of Object.entries(forms)) t.notOk(log.includes(form), `no ${name} form in the store's log`);
});

t.test('the logger masks the keys it was given in any field, message or error of a line', async (t) => {
  const script = `
    const { createLogger } = await import(${JSON.stringify(path.join(packageRoot, 'dist', 'src', 'logger.js'))});
    const key = ${JSON.stringify(KEY)};
    const log = createLogger('info', [key, undefined]);
    log.info({ url: 'http://h/x?api_key=' + encodeURIComponent(key), header: key }, 'sent ' + key);
    log.error({ err: new Error('failed for ' + new URLSearchParams({ k: key })) }, 'boom');
    log.info({ quoted: 'a"' + key }, 'plain line');
    createLogger('info').info({ clear: 'no keys given' }, 'unmasked');
    createLogger('info', ['k']).info({ clear: 'a one-letter key is not masked' }, 'capacity blocked');
  `;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  t.equal(run.status, 0, run.stderr);
  const lines = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
  t.equal(lines.length, 5, 'every line still JSON');
  for (const [name, form] of Object.entries(keyForms(KEY))) t.notOk(run.stdout.includes(form), `no ${name} form logged`);
  const line = (msg: string) => lines.find((entry) => entry.msg === msg);
  t.match(line('sent ***'), { url: 'http://h/x?api_key=***', header: '***' });
  t.match(line('boom'), { err: { message: 'failed for k=***' } });
  t.match(line('plain line'), { quoted: 'a"***' });
  t.match(line('unmasked'), { clear: 'no keys given' });
  t.match(line('capacity blocked'), { clear: 'a one-letter key is not masked' }, 'keys under 8 characters are left alone');
});

t.test('extraction is all or nothing: an entry named like the archive, a refused entry', async (t) => {
  const big = Buffer.alloc(64 * 1024, 'B');
  const selfNamed = storedZip([
    { name: 'a.txt', data: Buffer.from('A') },
    { name: 'export.zip', data: Buffer.from('an entry named like the archive') },
    { name: 'dir/b.txt', data: big },
  ]);
  const dir = t.testdir({ out: { 'keep.txt': 'kept', 'a.txt': 'old a' } });
  const out = path.join(dir, 'out');
  const zipPath = path.join(out, 'export.zip');
  writeFileSync(zipPath, selfNamed);
  const leftovers = () => readdirSync(dir).filter((name) => name !== 'out');

  const refused = await extractZip(zipPath, out).catch((e: unknown) => e as Error);
  t.match(refused, { name: 'SearchResponseError', message: /"export\.zip" would replace the archive itself/ });
  t.same(readFileSync(zipPath), selfNamed, 'the archive is intact');
  t.same(readdirSync(out).sort(), ['a.txt', 'export.zip', 'keep.txt'], 'nothing extracted');
  t.equal(readFileSync(path.join(out, 'a.txt'), 'utf8'), 'old a');
  t.same(leftovers(), [], 'no temporary directory left beside the target');

  // The export flow removes the archive once everything is extracted: the entry takes its place.
  t.same(await extractZip(zipPath, out, { removeArchive: true }), ['a.txt', 'dir/b.txt', 'export.zip']);
  t.equal(readFileSync(zipPath, 'utf8'), 'an entry named like the archive');
  t.same(readFileSync(path.join(out, 'dir', 'b.txt')), big, 'the entry after it is whole: the archive was not overwritten mid-extraction');
  t.equal(readFileSync(path.join(out, 'a.txt'), 'utf8'), 'A', 'an existing file of the same name is replaced');
  t.equal(readFileSync(path.join(out, 'keep.txt'), 'utf8'), 'kept', 'other files are left alone');
  t.same(leftovers(), []);

  // A bad entry after good ones: none of the good ones is left behind.
  const evilPath = path.join(dir, 'evil.zip');
  writeFileSync(evilPath, storedZip([{ name: 'good-1.txt', data: Buffer.from('1') }, { name: 'sub/good-2.txt', data: Buffer.from('2') }, { name: '../evil.txt', data: Buffer.from('x') }]));
  const fresh = path.join(dir, 'fresh');
  await t.rejects(extractZip(evilPath, fresh), { name: 'SearchResponseError' });
  t.notOk(existsSync(fresh), 'the target was never created');
  t.notOk(existsSync(path.join(dir, 'evil.txt')));
  await t.rejects(extractZip(evilPath, out), { name: 'SearchResponseError' });
  t.notOk(existsSync(path.join(out, 'good-1.txt')) || existsSync(path.join(out, 'sub')), 'entries read before the refused one were not kept');
  t.same(readdirSync(dir).sort(), ['evil.zip', 'out'], 'no temporary directory left');

  // A file where the archive needs a directory: refused before anything moves.
  writeFileSync(path.join(out, 'blocker'), 'a file');
  const blockedPath = path.join(dir, 'blocked.zip');
  writeFileSync(blockedPath, storedZip([{ name: 'first.txt', data: Buffer.from('1') }, { name: 'blocker/inner.txt', data: Buffer.from('2') }]));
  await t.rejects(extractZip(blockedPath, out), { message: /needs a directory where "blocker" is a file/ });
  t.notOk(existsSync(path.join(out, 'first.txt')), 'nothing moved');
});
