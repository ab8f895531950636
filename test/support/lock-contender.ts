/**
 * A Node process of its own that takes and releases data folders' locks on command, with the
 * built lock module (dist/src/store/engine/data-dir-lock.js, as `edge-events serve` loads it):
 * for tests of what the kernel's lock does between processes, without a store's start-up.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';
import { packageRoot } from '../../src/paths.js';

/** What a contender answers to a lock command. */
export type LockOutcome = { won: true } | { won: false; name: string; message: string };

export interface LockContender {
  child: ChildProcess;
  /** Tries to lock `dataDir` now. */
  lock(dataDir: string): Promise<LockOutcome>;
  /**
   * Readies a try to lock `dataDir` the instant the FIFO `gate` (mkfifo(1)) is opened for
   * writing: its open for reading blocks until then, so the kernel wakes every contender armed
   * on one gate at once. Resolves once armed, with the outcome to come.
   */
  armed(dataDir: string, gate: string): Promise<{ outcome: Promise<LockOutcome> }>;
  /** Releases the lock it holds, if any. */
  release(): Promise<void>;
  /** Closes its input: it exits, releasing what it holds. Resolves at its exit. */
  stop(): Promise<void>;
}

const lockModule = pathToFileURL(path.join(packageRoot, 'dist', 'src', 'store', 'engine', 'data-dir-lock.js')).href;

const PROGRAM = `
import { lockDataDir } from ${JSON.stringify(lockModule)};
import fs from 'node:fs';
import readline from 'node:readline';
const say = (answer) => process.stdout.write(JSON.stringify(answer) + '\\n');
let release;
say({ ready: true });
for await (const line of readline.createInterface({ input: process.stdin })) {
  const command = JSON.parse(line);
  if (command.gate) {
    say({ armed: true });
    fs.closeSync(fs.openSync(command.gate, 'r')); // a FIFO: the open returns when a writer opens it, in every contender at once
  }
  if (command.lock) {
    try {
      release = lockDataDir(command.lock);
      say({ won: true });
    } catch (err) {
      say({ won: false, name: err.name, message: err.message });
    }
  } else {
    release?.();
    release = undefined;
    say({ released: true });
  }
}
`;

/**
 * Starts a contender and waits until it is ready to take commands.
 * @param prefix a command that runs its arguments in place, e.g. `['unshare', '--pid', '--fork']`
 */
export async function startContender(prefix: string[] = []): Promise<LockContender> {
  const [command, ...args] = [...prefix, process.execPath, '--input-type=module', '-e', PROGRAM];
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const answers: ((answer: Record<string, unknown>) => void)[] = [];
  let failed: Error | undefined;
  readline.createInterface({ input: child.stdout! }).on('line', (line) => answers.shift()?.(JSON.parse(line) as Record<string, unknown>));
  void exited.then(() => {
    failed = new Error('the lock contender exited');
    for (const waiting of answers.splice(0)) waiting({ error: failed.message });
  });
  const next = () => new Promise<Record<string, unknown>>((resolve, reject) => (failed ? reject(failed) : answers.push((answer) => (answer.error ? reject(new Error(String(answer.error))) : resolve(answer)))));
  await next(); // ready
  return {
    child,
    lock: (dataDir) => {
      const answer = next();
      child.stdin!.write(`${JSON.stringify({ lock: dataDir })}\n`);
      return answer as Promise<LockOutcome>;
    },
    armed: async (dataDir, gate) => {
      const armed = next();
      const outcome = next() as Promise<LockOutcome>;
      child.stdin!.write(`${JSON.stringify({ lock: dataDir, gate })}\n`);
      await armed;
      return { outcome };
    },
    release: async () => {
      const answer = next();
      child.stdin!.write(`${JSON.stringify({ release: true })}\n`);
      await answer;
    },
    stop: async () => {
      child.stdin!.end();
      await exited;
    },
  };
}
