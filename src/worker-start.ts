/**
 * Starting the store's worker threads (the lifecycle worker, the create preparer) without the
 * preloads of the process that runs them, and moving buffers to them.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** Options that preload module hooks: `--import X`, `--import=X`, and their `--require` and `--loader` kin. */
const PRELOAD = /^--(?:import|require|loader|experimental-loader)(?:=|$)|^-r$/;

/**
 * The module a worker runs, next to the module that starts it: `<name>.js` once built, or
 * `<name>.ts` when the caller itself runs from its TypeScript source (a test run from source).
 * @param callerUrl the starting module's `import.meta.url`
 * @param name the worker module's file name, without extension
 */
export function workerModule(callerUrl: string, name: string): URL {
  return new URL(`./${name}${callerUrl.endsWith('.ts') ? '.ts' : '.js'}`, callerUrl);
}

/** `args` without their preloads (a preload given as two arguments loses both). */
function withoutPreloads(args: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!PRELOAD.test(arg)) kept.push(arg);
    else if (!arg.includes('=')) i++; // its value is the next argument
  }
  return kept;
}

/**
 * The Node options a built worker starts with: the process's less its preloads, or undefined
 * (inherit them all) when it has none. A Worker inherits `process.execArgv` (Node's reference:
 * `new Worker`, option `execArgv`), and each preload that registers module hooks (a test runner's
 * TypeScript, mock and coverage hooks, an agent's instrumentation) starts a hooks thread of its
 * own in the worker: about half a second each, at every start, for code the worker does not run.
 * A worker run from its TypeScript source keeps them: it needs the TypeScript hooks.
 */
function workerExecArgv(module: URL): string[] | undefined {
  if (module.pathname.endsWith('.ts')) return undefined;
  const kept = withoutPreloads(process.execArgv);
  return kept.length === process.execArgv.length ? undefined : kept;
}

/**
 * NODE_OPTIONS split into arguments as Node splits it: at spaces outside double quotes, the quotes
 * dropped, a backslash inside them taking the next character as it is.
 */
export function splitNodeOptions(value: string): string[] {
  const args: string[] = [];
  let quoted = false;
  let startsNew = true;
  for (let i = 0; i < value.length; i++) {
    let c = value[i];
    if (c === '\\' && quoted && i + 1 < value.length) c = value[++i];
    else if (c === ' ' && !quoted) {
      startsNew = true;
      continue;
    } else if (c === '"') {
      quoted = !quoted;
      continue;
    }
    if (startsNew) args.push(c);
    else args[args.length - 1] += c;
    startsNew = false;
  }
  return args;
}

/** `args` as a NODE_OPTIONS value that `splitNodeOptions` gives back. */
export function joinNodeOptions(args: readonly string[]): string {
  return args.map((arg) => (/[\s"\\]/.test(arg) ? `"${arg.replace(/["\\]/g, '\\$&')}"` : arg)).join(' ');
}

/** A NODE_OPTIONS value less its preloads; `value` itself when it has none. */
export function nodeOptionsWithoutPreloads(value: string): string {
  const args = splitNodeOptions(value);
  const kept = withoutPreloads(args);
  return kept.length === args.length ? value : joinNodeOptions(kept);
}

/**
 * The environment a built worker starts with: the process's with NODE_OPTIONS less its preloads,
 * or undefined (the process's as it is) when NODE_OPTIONS has none. A worker started with options
 * of its own (`workerExecArgv`) reads NODE_OPTIONS again, preloads included: a test runner puts its
 * hooks there for the child processes of a test (tap's process-info hooks), and with them each
 * worker loaded every module through them, three times as slowly.
 */
function workerEnv(module: URL): NodeJS.ProcessEnv | undefined {
  const options = process.env.NODE_OPTIONS;
  if (module.pathname.endsWith('.ts') || !options) return undefined;
  const kept = nodeOptionsWithoutPreloads(options);
  return kept === options ? undefined : { ...process.env, NODE_OPTIONS: kept };
}

/**
 * Starts `module` in a worker thread with `workerExecArgv()` and `workerEnv()`. A worker refuses
 * process-wide options given explicitly (`ERR_WORKER_INVALID_EXEC_ARGV`, e.g. `--max-old-space-size`
 * beside a preload): then it inherits the process's options, preloads included, as a worker does by
 * default.
 * @param module from `workerModule`
 * @throws what `new Worker` throws, but ERR_WORKER_INVALID_EXEC_ARGV
 */
export function startWorker(module: URL, options: Omit<WorkerOptions, 'execArgv' | 'env'> = {}): Worker {
  const execArgv = workerExecArgv(module);
  const env = workerEnv(module);
  try {
    return new Worker(module, { ...options, execArgv, ...(env && { env }) });
  } catch (err) {
    if ((execArgv === undefined && env === undefined) || (err as NodeJS.ErrnoException).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw err;
    return new Worker(module, options);
  }
}

/**
 * The ArrayBuffers under `buffers` that may be moved to another thread (postMessage's transfer
 * list) rather than copied: those a buffer owns whole. A small Buffer shares Node's pool, which
 * must stay.
 */
export function movableBuffers(buffers: Uint8Array[]): ArrayBuffer[] {
  const owned = buffers.filter((b) => b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer);
  return [...new Set(owned.map((b) => b.buffer as ArrayBuffer))];
}
