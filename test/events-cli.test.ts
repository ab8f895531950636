/**
 * `edge-events events` and the MCP tool `events_search` against a real store over HTTP: the
 * table and JSON outputs, paging with --cursor, a malformed query refused before anything is
 * sent, the store's key, and a store that does not answer.
 */
import { execFile } from 'node:child_process';
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { cliPath } from '../scripts/lib/spawned-store.js';
import { runEventsCli } from '../src/client/events-command.js';
import { StoreClient, StoreRequestError } from '../src/client/store-client.js';
import { describeStoreFailure } from '../src/client/store-failure.js';
import { createSearchMcpServer } from '../src/mcp/mcp-server.js';
import { imageEvent, postJson } from './support/events.js';
import { startStore, type TestStore } from './support/store-server.js';
import { freePort } from './support/waiting.js';

/** Runs a process expected to fail; resolves with its exit code and stderr. */
function execFileFailure(file: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => execFile(file, args, (error, _stdout, stderr) => resolve({ code: error ? (error.code as number | null) : 0, stderr })));
}

/** Runs the command; returns its exit code and what it wrote. */
async function run(argv: string[], env: Record<string, string | undefined> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runEventsCli(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env,
  });
  return { code, stdout, stderr };
}

/** Five events: cam-1 with a cat (detection and classification), cam-2 with two dogs on the last two. */
async function seed(store: TestStore, headers: Record<string, string> = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const dogs = [{ class: 'dog', x: 50, y: 50, width: 10, height: 10, confidence: 0.8 }, { class: 'dog', x: 70, y: 50, width: 10, height: 10, confidence: 0.7 }];
    const body = i < 3 ? imageEvent() : imageEvent({ deviceId: 'cam-2', images: [{ objectDetections: dogs }] });
    const res = await postJson(`${store.url}/v2/events`, body, headers);
    if (res.status !== 201) throw new Error(JSON.stringify(res.body));
    ids.push(res.body.id);
  }
  return ids;
}

t.test('a table, JSON, and paging with --cursor', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const ids = await seed(store);

  const table = await run(['class:cat', '--store', store.url]);
  t.equal(table.code, 0, 'exit 0');
  const lines = table.stdout.trim().split('\n');
  t.match(lines[0], /^TIME \(UTC\)\s+DEVICE\s+SCHEMA\s+CLASSES\s+ID$/, 'a header');
  t.equal(lines.length, 1 + 3 + 2, 'three events, then the count and the paging line');
  t.match(lines[1], new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\s+cam-1\\s+quality_check\\s+cat×2\\s+${ids[2]}$`), 'newest first: time, device, schema, classes with counts, id');
  t.match(table.stdout, /3 events\.\nNo more events\.\n$/);

  const json = await run(['device:cam-2 class:dog>=2', '--json'], { STORE_URL: store.url });
  t.equal(json.code, 0);
  const page = JSON.parse(json.stdout);
  t.same(page.events.map((e: { id: string }) => e.id), [ids[4], ids[3]], 'JSON: the page as the route answers it, STORE_URL from the environment');
  t.equal(page.next_cursor, null);
  t.equal(json.stderr, '');

  const first = JSON.parse((await run(['*', '--store', store.url, '--limit', '2', '--json'])).stdout);
  t.same(first.events.map((e: { id: string }) => e.id), [ids[4], ids[3]]);
  const humanFirst = await run(['*', '--store', store.url, '--limit', '2']);
  t.match(humanFirst.stdout, new RegExp(`Next page: --cursor ${first.next_cursor}\n$`), 'the human page prints the next cursor');
  const second = JSON.parse((await run(['*', '--store', store.url, '--limit', '2', '--cursor', first.next_cursor, '--json'])).stdout);
  t.same(second.events.map((e: { id: string }) => e.id), [ids[2], ids[1]], 'the cursor continues where the first page ended');
  t.equal((await run(['class:zebra', '--store', store.url])).stdout, 'No events.\n');
  t.match((await run(['*', '--store', store.url, '--limit', '1'])).stdout, /\n1 event\.\nNext page: /, 'one event, in the singular');
});

t.test('failures: a malformed query before any request, the store\'s key, no store, a bad limit', async (t) => {
  const store = await startStore({ API_KEY: 'secret' });
  t.teardown(store.stop);
  await seed(store, { 'X-API-Key': 'secret' });
  const deadPort = await freePort();

  const bad = await run(['class:cat AND', '--store', `http://127.0.0.1:${deadPort}`]);
  t.equal(bad.code, 1, 'a malformed query exits 1');
  t.match(bad.stderr, /^error: Invalid query at column 11: AND needs a term after it, but the query ends\n {2}class:cat AND\n {12}\^\n/, 'the reason and a caret, from the query alone (no store listens there)');
  const text = await run(['cat on the mat', '--store', store.url, '--json']);
  t.equal(text.code, 1);
  t.equal(text.stdout, '', 'JSON mode: nothing on stdout');
  t.match(JSON.parse(text.stderr).error.message, /semantic search, which needs the hosted API/);

  const denied = await run(['class:cat', '--store', store.url]);
  t.equal(denied.code, 2, 'no key: exit 2');
  t.match(denied.stderr, /answered 401.*\nhint: Pass the store's key with -k\/--api-key or set API_KEY/);
  const allowed = await run(['class:cat', '--store', store.url, '--json'], { API_KEY: 'secret' });
  t.equal(allowed.code, 0, 'API_KEY from the environment');
  t.equal(JSON.parse(allowed.stdout).count, 3);
  t.equal((await run(['class:cat', '--store', store.url, '-k', 'secret', '--json'])).code, 0, '-k');

  const away = await run(['class:cat', '--store', `http://127.0.0.1:${deadPort}`]);
  t.equal(away.code, 1, 'no store: exit 1');
  t.match(away.stderr, /No answer from the store at http:\/\/127\.0\.0\.1:\d+.*\nhint: Is the store running there\?/);
  t.equal((await run(['class:cat', '--store', store.url, '--limit', '0'])).code, 1, '--limit 0: exit 1');
  t.match((await run(['*', '--store', 'ftp://x'])).stderr, /--store must be an http\(s\) URL/);

  // The installed command, whose program shows the usage after an error of its own: not after these.
  const badOption = await execFileFailure(process.execPath, [cliPath, 'events', 'class:cat', '--json', '--bogus']);
  t.same(JSON.parse(badOption.stderr), { error: { message: 'unknown option \'--bogus\'', hint: 'See edge-events events --help. Quote the query as one argument; put -- before a query that starts with "-".' } }, '--json: one JSON line on stderr, no usage after it');
  t.match((await execFileFailure(process.execPath, [cliPath, 'events', 'class:cat', '--bogus'])).stderr, /^error: unknown option '--bogus'\nhint: See edge-events events --help\.[^\n]*\n$/, 'text: the error and its hint alone');
});

t.test('a cursor no page gave: its own message and hint, no caret; before any request', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  await seed(store);
  const hint = 'hint: A cursor is the next_cursor of the previous page of the same query, passed back as it was (edge-events events prints it as "Next page: --cursor <token>"); leave it out for the first page.\n';

  const garbage = await run(['*', '--store', store.url, '--cursor', 'garbage']);
  t.equal(garbage.code, 1);
  t.equal(garbage.stdout, '');
  t.equal(garbage.stderr, `error: Invalid cursor "garbage": not a next_cursor this store gave\n${hint}`);
  const json = await run(['*', '--store', `http://127.0.0.1:${await freePort()}`, '--cursor', 'YzEuMTc2MzY4MjUzMTUxNjAyMg=', '--json']);
  t.equal(json.code, 1, 'a cursor changed by one character, refused before any request (no store listens there)');
  t.match(JSON.parse(json.stderr).error, { message: /^Invalid cursor "YzEuMTc2MzY4MjUzMTUxNjAyMg="/, hint: /next_cursor of the previous page/ });

  // The store's own refusal of a cursor (a client that sends one unchecked) gets no caret hint either.
  const refused = await new StoreClient({ store: store.url }, {}).get('/v2/events/search?q=*&cursor=garbage').catch((error: unknown) => error);
  t.ok(refused instanceof StoreRequestError && refused.status === 400, 'the store answers 400');
  const failure = describeStoreFailure(refused);
  t.match(failure.message, /^Invalid cursor 'garbage'/);
  t.notMatch(failure.hint, /caret/, 'no caret in its message, none in the hint');
  t.match(describeStoreFailure(new StoreRequestError(400, 'Invalid query at column 7: class: needs a value\n  class:\n        ^')).hint, /Fix the query at the caret/, 'a query error keeps the caret hint');
});

t.test('the MCP tool events_search asks the same route', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const ids = await seed(store);
  const server = createSearchMcpServer({ flags: {}, store: { store: store.url }, env: {} });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client({ name: 'events-mcp-test', version: '1.0.0' });
  await client.connect(clientTransport);
  t.teardown(() => client.close());
  const call = async (args: Record<string, unknown>) => {
    const result = await client.callTool({ name: 'events_search', arguments: args });
    return { isError: result.isError === true, text: (result.content as { text: string }[])[0].text };
  };

  const page = await call({ query: 'class:dog', limit: 1 });
  t.notOk(page.isError);
  const body = JSON.parse(page.text);
  t.same(body.events.map((e: { id: string }) => e.id), [ids[4]]);
  const next = JSON.parse((await call({ query: 'class:dog', limit: 1, cursor: body.next_cursor })).text);
  t.same(next.events.map((e: { id: string }) => e.id), [ids[3]], 'paged with the cursor');
  const bad = await call({ query: 'class:' });
  t.ok(bad.isError, 'a malformed query is a tool error');
  t.match(bad.text, /Invalid query at column 7: class: needs a value/);
  const cursor = await call({ query: 'class:dog', cursor: 'garbage' });
  t.ok(cursor.isError, 'a bad cursor is a tool error');
  t.match(cursor.text, /^Invalid cursor "garbage": not a next_cursor this store gave\nHint: A cursor is the next_cursor of the previous page/);
  const unknown = await client.callTool({ name: 'events_search', arguments: { query: '*', extra: 1 } });
  t.ok(unknown.isError, 'unknown arguments are refused');
});
