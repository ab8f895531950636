/**
 * An interrupted `edge-events export` (docs/USAGE.md, "Exporting a dataset"): the built binary as
 * a child process, downloading from a real store (events with real photos) through a proxy that
 * holds the answer after its first bytes, so the signal always lands mid-download. SIGTERM with
 * pipes; SIGINT on a real terminal (a pty from util-linux's `script`), whose output shows what the
 * progress line did to the cursor and line wrap.
 */
import t from 'tap';
import type { Test } from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { cliPath } from '../scripts/lib/spawned-store.js';
import { startCli } from './support/cli-process.js';
import { fixture, imageEvent, postJson } from './support/events.js';
import { startStore } from './support/store-server.js';
import { until } from './support/waiting.js';

const API_KEY = 'key-123';
const PHOTOS = ['retina.jpg', 'cat.jpg', 'rocket.jpg', 'camera.jpg'];

// One store for both tests: an event per photo (about 360 KiB of images), far more than the proxy lets through.
const store = await startStore({ API_KEY });
t.teardown(store.stop);
for (const photo of PHOTOS) {
  const body = imageEvent({ images: [{ base64Image: fixture(photo).toString('base64') }] });
  const res = await postJson(`${store.url}/v2/events`, body, { 'X-API-Key': API_KEY });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
}

function workDir(t: Test): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'export-interrupt-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A TCP proxy to `store` that passes the first `passBytes` of each answer, then holds the rest:
 * the export is still downloading, for as long as the test needs, from the real store.
 */
async function holdingProxy(t: Test, store: string, passBytes: number): Promise<string> {
  const upstream = new URL(store);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const origin = net.connect(Number(upstream.port), upstream.hostname);
    sockets.add(client).add(origin);
    client.pipe(origin);
    let passed = 0;
    origin.on('data', (chunk: Buffer) => {
      const room = passBytes - passed;
      if (room > 0) client.write(chunk.subarray(0, room));
      passed += chunk.length;
      if (passed >= passBytes) origin.pause();
    });
    client.on('error', () => origin.destroy());
    origin.on('error', () => client.destroy());
    client.on('close', () => origin.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The hidden temporary file of a download to `<dir>/d.zip`, once it exists. */
async function partialIn(dir: string): Promise<string> {
  let found: string | undefined;
  await until('the .partial download file', () => (found = readdirSync(dir).find((name) => /^\.d\.zip\.\d+-\d+\.partial$/.test(name))) !== undefined);
  return found!;
}

t.test('SIGTERM mid-download removes the .partial and exits 143', async (t) => {
  const proxy = await holdingProxy(t, store.url, 16 * 1024);
  const dir = workDir(t);
  const cli = startCli(['export', '*', '-o', path.join(dir, 'd.zip'), '--store', proxy, '-k', API_KEY]);
  const partial = await partialIn(dir);
  await until('the first bytes in the .partial', () => statSync(path.join(dir, partial)).size > 0);
  cli.child.kill('SIGTERM');
  t.same(await cli.exited, { code: 143, signal: null }, 'exit code 128 + 15');
  t.same(readdirSync(dir), [], 'the .partial is removed, no zip written');
});

t.test('Ctrl-C (SIGINT) on a terminal removes the .partial, restores the cursor and line wrap, exits 130', async (t) => {
  const proxy = await holdingProxy(t, store.url, 16 * 1024);
  const dir = workDir(t);
  // util-linux's script gives the binary a real terminal (a pty), whose output it copies to its
  // stdout; -e answers the binary's exit code.
  const command = [process.execPath, cliPath, 'export', '*', '-o', path.join(dir, 'd.zip'), '--store', proxy, '-k', API_KEY]
    .map((arg) => `'${arg.replace(/'/g, "'\\''")}'`).join(' ');
  const terminal = spawn('script', ['-qefc', command, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let screen = '';
  terminal.stdout.on('data', (d) => (screen += d));
  const exited = once(terminal, 'close');
  const partial = await partialIn(dir);
  await until('the progress line on the terminal', () => screen.includes('Export (coco)'));
  const pid = Number(/\.(\d+)-\d+\.partial$/.exec(partial)![1]);
  process.kill(pid, 'SIGINT');
  const [code] = await exited;
  t.equal(code, 130, 'exit code 128 + 2');
  t.same(readdirSync(dir), [], 'the .partial is removed');
  // cli-progress (lib/terminal.js) hides the cursor with ESC[?25l and turns line wrap off with
  // ESC[?7l while the line is drawn; both must be turned back on after the last time.
  for (const [what, off, on] of [['cursor', '\x1b[?25l', '\x1b[?25h'], ['line wrap', '\x1b[?7l', '\x1b[?7h']]) {
    t.ok(screen.includes(off), `the progress line turned the ${what} off`);
    t.ok(screen.lastIndexOf(on) > screen.lastIndexOf(off), `the ${what} is back on at the end`);
  }
});
