/**
 * Supervision by systemd without systemd (docs/OPERATIONS.md, "Supervision by systemd"): Python
 * binds a unix datagram socket as systemd's notify socket does, the built store runs as a child
 * process with NOTIFY_SOCKET naming it and WATCHDOG_USEC set, and the test reads what arrives:
 * READY=1 with a STATUS= line once it listens, WATCHDOG=1 at half the timeout, STOPPING=1 on SIGTERM;
 * and the same through systemd's `systemd-notify` where node-unix-socket does not load.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import t, { type Test } from 'tap';
import { spawnStore } from '../../scripts/lib/spawned-store.js';
import { formatNotifyState, watchdogIntervalMs } from '../../src/supervision/systemd-notify.js';
import { imageEvent, postJson } from '../support/events.js';
import { tempDataDir } from '../support/store-server.js';
import { until } from '../support/waiting.js';

// Debian's python3 (.ci/run installs it; PYTHON3_PATH points elsewhere).
const python = process.env.PYTHON3_PATH ?? 'python3';

/** Each datagram as it arrived: its variables, and when (ms, Python's monotonic clock). */
interface Datagram {
  at: number;
  vars: Record<string, string>;
}

/** Binds a unix datagram socket at `socketPath` with Python and collects what arrives. */
async function notifySocket(t: Test, socketPath: string): Promise<Datagram[]> {
  const script = [
    'import json, socket, sys, time',
    's = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)',
    's.bind(sys.argv[1])',
    'print("bound", flush=True)',
    'while True:',
    '    data = s.recv(65536)',
    '    print(json.dumps({"at": time.monotonic() * 1000, "text": data.decode()}), flush=True)',
  ].join('\n');
  const receiver = spawn(python, ['-c', script, socketPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => receiver.kill());
  const received: Datagram[] = [];
  const lines = createInterface({ input: receiver.stdout });
  let bound = false;
  lines.on('line', (line) => {
    if (line === 'bound') {
      bound = true;
      return;
    }
    const { at, text } = JSON.parse(line) as { at: number; text: string };
    const vars = Object.fromEntries(text.split('\n').filter(Boolean).map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
    received.push({ at, vars });
  });
  await until('the notify socket bound', () => bound);
  return received;
}

t.test('READY=1 with a status once listening, WATCHDOG=1 at half the timeout, STOPPING=1 on SIGTERM', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-notify-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const socketPath = path.join(dir, 'notify');
  const received = await notifySocket(t, socketPath);

  const store = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir(), NOTIFY_SOCKET: socketPath, WATCHDOG_USEC: '400000', MAX_RECORDS: '1000' });
  t.teardown(() => store.child.kill('SIGKILL'));
  await until('READY=1', () => received.some((d) => d.vars.READY === '1'));
  const ready = received.find((d) => d.vars.READY === '1')!;
  t.equal(received.indexOf(ready), 0, 'READY=1 comes first');
  const port = new URL(store.url).port;
  t.match(ready.vars.STATUS, new RegExp(`^serving on (uws \\(.+\\)|node), port ${port}; 0 events \\(0\\.0% of 1,000\\); .+ stored \\(.+% of 10 GiB\\)$`), 'the status names the engine, the events stored and the capacity');
  // The log line follows the datagram, through the logger's own stream: wait for it, not race it.
  t.ok(await until('the log line', () => /"msg":"systemd notified: ready"/.test(store.output())), 'the log says systemd was notified');
  t.equal((await postJson(`${store.url}/v2/events`, imageEvent())).status, 201, 'it serves');

  await until('six watchdog pings', () => received.filter((d) => d.vars.WATCHDOG === '1').length >= 6, 10_000);
  const pings = received.filter((d) => d.vars.WATCHDOG === '1').map((d) => d.at);
  // 400 ms timeout: a ping every 200 ms. A busy machine delays pings (and Node may fire the next
  // one sooner after a late one), so only the count is bounded: never more than one per 200 ms
  // on average, which a flood of pings would break whatever the load.
  const span = pings[pings.length - 1] - pings[0];
  t.ok(pings.length - 1 <= span / 200 + 1, `${pings.length} pings in ${Math.round(span)} ms: at most one per 200 ms`);

  store.child.kill('SIGTERM');
  const [code] = (await once(store.child, 'exit')) as [number | null];
  t.equal(code, 0, 'a graceful stop');
  await until('STOPPING=1', () => received.some((d) => d.vars.STOPPING === '1'));
  const stopping = received.findIndex((d) => d.vars.STOPPING === '1');
  t.match(received[stopping].vars.STATUS, /^stopping/);
  t.same(received.slice(stopping + 1), [], 'nothing after STOPPING=1');
});

t.test('without node-unix-socket (no arm64 build in the registry), the messages go through systemd-notify, in order', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-notify-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const socketPath = path.join(dir, 'notify');
  const received = await notifySocket(t, socketPath);
  // A preload that makes node-unix-socket fail to load, as its loader fails on arm64.
  const shim = path.join(dir, 'no-unix-socket.cjs');
  fs.writeFileSync(shim, [
    "const Module = require('node:module');",
    'const resolve = Module._resolveFilename;',
    'Module._resolveFilename = function (request, ...rest) {',
    "  if (request === 'node-unix-socket') throw Object.assign(new Error(\"Cannot find module 'node-unix-socket-linux-arm64-gnu'\"), { code: 'MODULE_NOT_FOUND' });",
    '  return resolve.call(this, request, ...rest);',
    '};',
  ].join('\n'));

  const store = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir(), NOTIFY_SOCKET: socketPath, WATCHDOG_USEC: '400000', NODE_OPTIONS: `--require ${shim}` });
  t.teardown(() => store.child.kill('SIGKILL'));
  // systemd-notify follows each message with a BARRIER=1 of its own, to wait until it was taken.
  const messages = () => received.filter((d) => d.vars.BARRIER === undefined);
  await until('READY=1', () => messages().some((d) => d.vars.READY === '1'));
  t.equal(messages()[0].vars.READY, '1', 'READY=1 comes first');
  t.match(messages()[0].vars.STATUS, /^serving on /, 'with the status');
  t.match(store.output(), /"level":40.*node-unix-socket does not load here; sd_notify messages go through systemd-notify, which needs NotifyAccess=all/);
  t.equal((await postJson(`${store.url}/v2/events`, imageEvent())).status, 201, 'it serves');
  await until('three watchdog pings', () => messages().filter((d) => d.vars.WATCHDOG === '1').length >= 3, 10_000);

  store.child.kill('SIGTERM');
  const [code] = (await once(store.child, 'exit')) as [number | null];
  t.equal(code, 0, 'a graceful stop');
  await until('STOPPING=1', () => messages().some((d) => d.vars.STOPPING === '1'));
  const stopping = messages().findIndex((d) => d.vars.STOPPING === '1');
  t.same(messages().slice(stopping + 1), [], 'nothing after STOPPING=1');
});

t.test('an abstract NOTIFY_SOCKET is refused with an error; the store serves', async (t) => {
  const store = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir(), NOTIFY_SOCKET: '@edge-events-test' });
  t.teardown(() => store.child.kill('SIGKILL'));
  // Logged once listening, right after the line spawnStore waits for.
  await until('the error logged', () => /"level":50.*NOTIFY_SOCKET is not a socket path/.test(store.output()));
  t.notMatch(store.output(), /systemd notified/);
  t.equal((await fetch(`${store.url}/health`)).status, 200);
});

t.test('the watchdog interval: half of WATCHDOG_USEC, for this process only', async (t) => {
  t.equal(watchdogIntervalMs({ WATCHDOG_USEC: '30000000' }, 42), 15_000, 'WatchdogSec=30: every 15 s');
  t.equal(watchdogIntervalMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '42' }, 42), 15_000, 'WATCHDOG_PID naming this process');
  t.equal(watchdogIntervalMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '7' }, 42), undefined, 'WATCHDOG_PID naming another process');
  t.equal(watchdogIntervalMs({}, 42), undefined, 'no watchdog');
  t.equal(watchdogIntervalMs({ WATCHDOG_USEC: 'soon' }, 42), undefined, 'not a number');
  t.equal(watchdogIntervalMs({ WATCHDOG_USEC: '0' }, 42), undefined, 'zero');
});

t.test('a message is KEY=value lines; a newline in a value cannot start another variable', async (t) => {
  t.equal(formatNotifyState({ READY: 1, STATUS: 'serving\nWATCHDOG=1' }), 'READY=1\nSTATUS=serving WATCHDOG=1\n');
  t.throws(() => formatNotifyState({ 'status': 'x' }), /upper case/);
});
