/**
 * The log's format (docs/OPERATIONS.md, "Logs"; LOG_FORMAT): `edge-events serve` on a terminal
 * writes lines for a person (pino-pretty), its lifecycle worker's too; anywhere else (a pipe, as
 * journald's) JSON lines; LOG_FORMAT=json or pretty chooses either way. Each runs the real
 * `edge-events serve`, on a real terminal where it says so (util-linux's `script` gives it a pty).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { cliPath } from '../../scripts/lib/spawned-store.js';
import { startCli } from '../support/cli-process.js';
import { postJson, smallEvent } from '../support/events.js';
import { tempDataDir } from '../support/store-server.js';
import { until } from '../support/waiting.js';

const LISTENING = 'edge-event-store listening';

/**
 * The settings of a store on port 0 whose events are past retention a tenth of a second after
 * their create, so that a cleanup deletes and its lifecycle worker logs it (`makeWorkerLog`).
 */
function settings(extra: Record<string, string> = {}): Record<string, string> {
  return { ...(process.env as Record<string, string>), HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDataDir(), RETENTION_DAYS: '0.000001', ...extra };
}

/** `text` without its terminal colours (SGR sequences). */
function withoutColours(text: string): string {
  return text.replace(/\x1b\[[0-9;]*m/g, '');
}

/** The port of the listening line, in either format: `"port":N` or `    port: N`. */
function portIn(output: string): number | undefined {
  const match = /"port":(\d+)|^\s+port: (\d+)/m.exec(output);
  return match ? Number(match[1] ?? match[2]) : undefined;
}

/** Has the lifecycle worker log a line (its `cleanup`): an event, then cleanups until one deleted it. */
async function makeWorkerLog(port: number, output: () => string): Promise<void> {
  const url = `http://127.0.0.1:${port}`;
  if ((await postJson(`${url}/v2/events`, smallEvent())).status !== 201) throw new Error('the create failed');
  await until('the worker logs a cleanup that deleted the event', async () => {
    await fetch(`${url}/admin/cleanup`, { method: 'POST' });
    return /"thread":"lifecycle".*"msg":"cleanup"|INFO: cleanup\s+thread: "lifecycle"/.test(withoutColours(output()));
  });
}

/** The pid the running store wrote into DATA_DIR/store.lock. */
function storePid(dataDir: string): number {
  return (JSON.parse(fs.readFileSync(path.join(dataDir, 'store.lock'), 'utf8')) as { pid: number }).pid;
}

/** Runs `edge-events serve` on a pty until it listens; resolves with what the terminal showed, after a graceful stop. */
async function serveOnTerminal(env: Record<string, string>): Promise<string> {
  const command = `'${process.execPath}' '${cliPath}' serve`;
  const terminal = spawn('script', ['-qefc', command, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let screen = '';
  terminal.stdout.on('data', (d) => (screen += d));
  const closed = once(terminal, 'close');
  await until('the store listens', () => portIn(screen) !== undefined);
  await makeWorkerLog(portIn(screen)!, () => screen);
  process.kill(storePid(env.DATA_DIR), 'SIGTERM');
  const [code] = await closed;
  if (code !== 0) throw new Error(`the store exited ${code}: ${screen}`);
  return screen;
}

/** Runs `edge-events serve` with its stdout a pipe until it listens; resolves with its output, after a graceful stop. */
async function serveOnPipe(env: Record<string, string>): Promise<string> {
  const store = startCli(['serve'], { env });
  await until('the store listens', () => portIn(store.stdout()) !== undefined);
  await makeWorkerLog(portIn(store.stdout())!, () => store.stdout());
  store.child.kill('SIGTERM');
  const { code } = await store.exited;
  if (code !== 0) throw new Error(`the store exited ${code}: ${store.stdout()}${store.stderr()}`);
  return store.stdout();
}

/** The lines that are JSON objects with a level. */
function jsonLines(output: string): string[] {
  return output.split(/\r?\n/).filter((line) => /^\{"level":\d+,/.test(line));
}

t.test('on a terminal the log is for a person: time, level and message, fields on lines of their own, no JSON', async (t) => {
  const screen = await serveOnTerminal(settings());
  t.same(jsonLines(screen), [], 'not one JSON line');
  t.match(screen, /\[\d\d:\d\d:\d\d\.\d{3}\] .*INFO.*: .*edge-event-store listening/, 'the listening line: [time] INFO: message');
  t.match(screen, /^\s+port: \d+/m, 'its fields below it, by name');
  t.match(screen, /thread: "lifecycle"/, 'the lifecycle worker\'s lines too');
  t.notMatch(screen, /hostname|"service"/, 'without the fields every line carries');
  t.match(screen, /edge-event-store stopped/, 'to the graceful stop');
});

t.test('LOG_FORMAT=json keeps JSON lines on a terminal; on a pipe JSON is the default and LOG_FORMAT=pretty turns it to lines for a person', async (t) => {
  const forced = await serveOnTerminal(settings({ LOG_FORMAT: 'json' }));
  t.ok(jsonLines(forced).some((line) => line.includes(`"msg":"${LISTENING}"`)), 'LOG_FORMAT=json on a terminal: the listening line is JSON');
  t.ok(jsonLines(forced).some((line) => line.includes('"thread":"lifecycle"')), 'and the worker\'s');

  const piped = await serveOnPipe(settings());
  const lines = piped.split('\n').filter(Boolean);
  t.ok(lines.length > 3 && lines.every((line) => JSON.parse(line).service === 'edge-events'), `a pipe (journald): every one of ${lines.length} lines is JSON`);

  const pretty = await serveOnPipe(settings({ LOG_FORMAT: 'pretty' }));
  t.same(jsonLines(pretty), [], 'LOG_FORMAT=pretty on a pipe: no JSON line');
  t.match(pretty, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: edge-event-store listening$/m, 'the listening line for a person, uncoloured on a pipe');
  t.match(pretty, /^\s+thread: "lifecycle"$/m, 'the worker\'s too');
});
