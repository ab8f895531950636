/**
 * A server the bench measures, as a process of its own so that /proc counts its CPU and bytes
 * alone (process-meter.ts): the store (`node <package>/dist/src/cli.js serve`, as the installed
 * binary runs it) or the durable floor (floor-main.ts). Started on PORT=0, it is ready once its
 * `... listening` log line names the port the kernel gave and GET /health answers 200; both are
 * waited for as conditions, never by sleeping.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { processCounters, type ProcessCounters } from './process-meter.js';

/** A started server. */
export interface ServerChild {
  pid: number;
  /** e.g. http://127.0.0.1:41234 */
  url: string;
  /** The HTTP engine its listening line names (docs/OPERATIONS.md, "HTTP engines"). */
  engine: 'uws' | 'node';
  /** What it wrote to stdout and stderr so far. */
  output(): string;
  /** Its CPU and bytes written so far. */
  counters(): ProcessCounters;
  /** SIGTERM, as systemd stops the store; resolves with the exit code (0: a graceful stop). */
  stop(): Promise<number | null>;
  /** SIGKILL, for an interrupted or failed run; resolves once it exited. */
  kill(): Promise<void>;
}

/** Most time a server may take to listen and answer /health, ms. */
const START_LIMIT_MS = 60_000;

/** The port and engine of a `... listening` pino line among `lines`, if one is there. */
function listeningLine(lines: string[]): { port: number; engine: 'uws' | 'node' } | undefined {
  for (const line of lines) {
    if (!line.includes('listening')) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; port?: number; httpEngine?: 'uws' | 'node' };
      if (entry.msg?.endsWith('listening') && typeof entry.port === 'number' && entry.httpEngine) return { port: entry.port, engine: entry.httpEngine };
    } catch {
      // not a log line of JSON
    }
  }
  return undefined;
}

/** Resolves with the port and engine once `child` logged its listening line; rejects when it exits first or takes too long. */
function listened(child: ChildProcess, output: () => string, name: string): Promise<{ port: number; engine: 'uws' | 'node' }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not listen within ${START_LIMIT_MS / 1000} s:\n${output()}`)), START_LIMIT_MS);
    const onData = () => {
      const found = listeningLine(output().split('\n'));
      if (!found) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve(found);
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (code ${code}, signal ${signal}) before it listened:\n${output()}`));
    });
  });
}

/**
 * GETs /health until it answers 200; each try waits for the answer before the next. Stops once
 * `child` has exited (a run stopped meanwhile kills its servers): a refused connection is answered
 * at once, and the tries would go on at full speed until the deadline.
 */
async function healthy(child: ChildProcess, url: string, name: string, output: () => string): Promise<void> {
  const deadline = Date.now() + START_LIMIT_MS;
  let last = '';
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${name} exited (code ${child.exitCode}, signal ${child.signalCode}) before GET /health answered 200 (last: ${last}):\n${output()}`);
    }
    try {
      const answer = await fetch(`${url}/health`);
      if (answer.status === 200) return;
      last = `${answer.status} ${await answer.text()}`;
    } catch (err) {
      last = (err as Error).message;
    }
  }
  throw new Error(`${name}: GET /health did not answer 200 within ${START_LIMIT_MS / 1000} s (last: ${last})`);
}

/**
 * Starts `node <script> [...args]` with `env` (PORT=0 and HOST=127.0.0.1 are set here) and waits
 * until it serves.
 * @param name how errors name it, e.g. `the store`
 * @param spawned called as soon as the process exists, before it serves, so that an interrupted
 *   run can kill a server still starting
 * @throws Error with the process's output when it exits, or does not serve within 60 s
 */
export async function startServerChild(name: string, script: string, args: string[], env: NodeJS.ProcessEnv, spawned: (server: ServerChild) => void = () => {}): Promise<ServerChild> {
  const child = spawn(process.execPath, [script, ...args], { env: { ...env, PORT: '0', HOST: '127.0.0.1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const server: ServerChild = {
    pid: child.pid!,
    url: '',
    engine: 'node',
    output: () => output,
    counters: () => processCounters(child.pid!),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  spawned(server);
  try {
    const { port, engine } = await listened(child, () => output, name);
    Object.assign(server, { url: `http://127.0.0.1:${port}`, engine });
    await healthy(child, server.url, name, () => output);
  } catch (err) {
    await server.kill();
    throw err;
  }
  return server;
}
