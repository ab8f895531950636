/**
 * One nats-server with JetStream for a harness script (the hub screenshot of
 * scripts/operator-screenshot.ts): Debian's `nats-server` (`apt-get install nats-server`;
 * NATS_SERVER_PATH overrides where it is, scripts/lib/host-programs.mjs), on free ports of
 * 127.0.0.1, its store dir and log in a folder the caller gives (never the default store dir, a
 * `nats` folder under the OS temp dir shared by every server).
 *
 * Ready once its monitoring port answers `/healthz?js-enabled-only=true`, JetStream up (nats-server's
 * monitoring reference, "Health"; the same check the tests' servers wait on). Killed if the script
 * exits with it still running.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from './free-port.js';
import { findProgram } from './host-programs.mjs';

export interface NatsServer {
  /** Client URL, e.g. `nats://127.0.0.1:41234`, for NATS_URL and NATS_SOURCE_URL. */
  url: string;
  /** Stops it with SIGTERM (JetStream flushes its stores) and waits for the exit. */
  stop(): Promise<void>;
}

const logTail = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-10).join('\n') : '(no log)');

/**
 * Starts nats-server with JetStream, its store in `dir/jetstream` and its log in
 * `dir/nats-server.log`, and waits until JetStream is up.
 * @throws Error naming the Debian package when there is no nats-server, or with the log's tail
 *   when it exits or is not ready within `timeoutMs`
 */
export async function startNatsServer(dir: string, timeoutMs = 30_000): Promise<NatsServer> {
  const found = findProgram('nats-server');
  if ('problem' in found) throw new Error(found.problem);
  const [port, monitorPort] = [await freePort(), await freePort()];
  const logFile = path.join(dir, 'nats-server.log');
  fs.mkdirSync(dir, { recursive: true });
  const child = spawn(found.path, ['-js', '-sd', dir, '-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-l', logFile], { stdio: 'ignore' });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`nats-server exited before it was ready:\n${logTail(logFile)}`);
    const status = await fetch(`http://127.0.0.1:${monitorPort}/healthz?js-enabled-only=true`, { signal: AbortSignal.timeout(2000) }).then((res) => res.status, () => 0);
    if (status === 200) return { url: `nats://127.0.0.1:${port}`, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`nats-server: JetStream not up within ${timeoutMs} ms:\n${logTail(logFile)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
