/**
 * What the CLIs print from a server reaches the terminal with its control characters shown as
 * escapes (docs/SECURITY.md, "A store or search server the CLI talks to"; src/terminal-text.ts):
 * a `device_id` that sets the window title and writes the clipboard (OSC 0, OSC 52) stored in a
 * real store and listed by `edge-events events`, in the table and as JSON; the store's error detail
 * and an export's error from a server that sends them (node:http); the search CLI's result table,
 * cursor and error from a fake hosted API.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import t from 'tap';
import type { Test } from 'tap';
import { runEventsCli } from '../src/client/events-command.js';
import { runExportCli } from '../src/export/export-command.js';
import { runSearchCli } from '../src/search/search-command.js';
import { terminalJson, visibleControls } from '../src/terminal-text.js';
import { imageEvent, postJson } from './support/events.js';
import { startStore } from './support/store-server.js';

/** The report's payload: OSC 0 (window title) and OSC 52 (clipboard), each ended by BEL; then a C1 CSI and DEL. */
const HOSTILE = '\x1b]0;PWNED\x07\x1b]52;c;cm0gLXJmIH4=\x07\u009b2J\x7f';
const SHOWN = '\\x1b]0;PWNED\\x07\\x1b]52;c;cm0gLXJmIH4=\\x07\\x9b2J\\x7f';
/** Any C0 control but a line feed, DEL, or a C1 control. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

interface Output { code: number; stdout: string; stderr: string }

/** An io that collects what a CLI writes. */
function collect() {
  const out = { stdout: '', stderr: '' };
  return {
    out,
    io: { stdout: { write: (text: string) => (out.stdout += text) }, stderr: { write: (text: string) => (out.stderr += text), isTTY: false } },
  };
}

async function events(argv: string[], env: Record<string, string> = {}): Promise<Output> {
  const { out, io } = collect();
  const code = await runEventsCli(argv, { ...io, env });
  return { code, ...out };
}

/** A server answering every request with `status` and `body` (JSON), on 127.0.0.1. */
async function fakeServer(t: Test, status: number, body: unknown): Promise<string> {
  const server = http.createServer((request, response) => {
    request.resume();
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test('the helper: C0, DEL and C1 become \\xHH; text, backslashes and non-ASCII stay; JSON keeps its value', async (t) => {
  t.equal(visibleControls(HOSTILE), SHOWN);
  t.equal(visibleControls('cam-1 é ✓ C:\\data\ttab'), 'cam-1 é ✓ C:\\data\\x09tab');
  t.equal(visibleControls('line one\nline two\r', { lines: true }), 'line one\nline two\\x0d', 'lines: a line feed kept, a carriage return shown');
  const json = terminalJson({ device_id: HOSTILE });
  t.notMatch(json, RAW_CONTROL, 'no raw control in the JSON');
  t.same(JSON.parse(json), { device_id: HOSTILE }, 'the same value');
});

t.test('the helper: bidirectional controls, which reorder what a line shows (Trojan Source), become \\uHHHH', async (t) => {
  // RLO makes "cam-1 fdp.exe" read as "cam-1 exe.pdf"; LRI..PDI and the marks move text as well.
  const reordering = 'cam-1 \u202efdp.exe \u2066x\u2069 \u200e\u200f\u061c';
  t.equal(visibleControls(reordering), 'cam-1 \\u202efdp.exe \\u2066x\\u2069 \\u200e\\u200f\\u061c');
  t.equal(visibleControls(reordering, { lines: true }), visibleControls(reordering), 'with lines kept too');
  const json = terminalJson({ device_id: reordering });
  t.notMatch(json, /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/, 'none raw in the JSON');
  t.same(JSON.parse(json), { device_id: reordering }, 'the same value');
  t.equal(visibleControls('cam-1 é ✓ \u2014 \u05d0'), 'cam-1 é ✓ \u2014 \u05d0', 'other non-ASCII, Hebrew letters included, is kept');
});

t.test('edge-events events: a hostile device_id, stored in a real store, is shown, not obeyed', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const created = await postJson(`${store.url}/v2/events`, imageEvent({ deviceId: HOSTILE }));
  t.equal(created.status, 201, 'the store keeps the device_id as sent');

  const table = await events(['class:cat', '--store', store.url]);
  t.equal(table.code, 0);
  t.notMatch(table.stdout, RAW_CONTROL, 'no control character reaches the terminal');
  t.match(table.stdout, '\\x1b]0;PWNED\\x07\\x1b]52;c;', 'the escapes are shown instead');
  const json = await events(['class:cat', '--store', store.url, '--json']);
  t.notMatch(json.stdout, RAW_CONTROL, 'JSON mode too');
  t.equal(JSON.parse(json.stdout).events[0].device_id, HOSTILE, 'and its JSON holds the value as stored');
});

t.test('an error detail, a cursor and a hint from the server are shown, not obeyed', async (t) => {
  const refusing = await fakeServer(t, 400, { detail: `bad query ${HOSTILE}\n  class:cat\n  ^` });
  const refused = await events(['class:cat', '--store', refusing]);
  t.equal(refused.code, 1);
  t.notMatch(refused.stderr, RAW_CONTROL, 'events: the error line');
  t.match(refused.stderr, `error: bad query ${SHOWN}\n  class:cat\n  ^\nhint:`, 'the caret stays under its column');
  const asJson = await events(['class:cat', '--store', refusing, '--json']);
  t.notMatch(asJson.stderr, RAW_CONTROL, 'events --json: the error object');

  const paging = await fakeServer(t, 200, { events: [], count: 0, next_cursor: `c${HOSTILE}` });
  const page = await events(['class:cat', '--store', paging]);
  t.notMatch(page.stdout, RAW_CONTROL, 'events: the next cursor');

  const { out, io } = collect();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-terminal-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const code = await runExportCli(['class:cat', '--store', refusing, '-o', path.join(dir, 'd.zip')], { ...io, env: {} });
  t.equal(code, 1);
  t.notMatch(out.stderr, RAW_CONTROL, 'export: the error line');
  t.match(out.stderr, SHOWN);
});

t.test('edge-events search: the result table, the cursor and the hosted API\'s error are shown, not obeyed', async (t) => {
  const result = { id: `img${HOSTILE}`, filename: `a${HOSTILE}.jpg`, tags: [HOSTILE], owner: HOSTILE };
  const hosted = await fakeServer(t, 200, { results: [result], total: 1, continuationToken: `ct${HOSTILE}` });
  const env = { SEARCH_API_KEY: 'k', SEARCH_WORKSPACE: 'acme' };
  const run = async (base: string, argv: string[]): Promise<Output> => {
    const { out, io } = collect();
    const code = await runSearchCli(argv, { ...io, env: { ...env, SEARCH_BASE_URL: base }, client: { sleep: async () => {}, retry: { retries: 0 } } });
    return { code, ...out };
  };
  const table = await run(hosted, ['tag:night', '--fields', 'filename,tags,owner']);
  t.equal(table.code, 0, table.stderr);
  t.notMatch(table.stdout, RAW_CONTROL, 'the table and the cursor line');
  t.match(table.stdout, 'img\\x1b]0;PWNED');
  const json = await run(hosted, ['tag:night', '--json']);
  t.notMatch(json.stdout, RAW_CONTROL, 'JSON mode');
  t.equal(JSON.parse(json.stdout).results[0].owner, HOSTILE);

  const failing = await fakeServer(t, 400, { error: `refused ${HOSTILE}`, hint: `try ${HOSTILE}` });
  const refused = await run(failing, ['tag:night']);
  t.equal(refused.code, 1);
  t.notMatch(refused.stderr, RAW_CONTROL, 'the error and the hint');
  t.match(refused.stderr, `refused ${SHOWN}`);
  const refusedJson = await run(failing, ['tag:night', '--json']);
  t.notMatch(refusedJson.stderr, RAW_CONTROL, 'the JSON error');
});
