/**
 * A server under test (edge-event-store from the repository's dist/, or a peer of lib/systems.js):
 * started on a port with its own DATA_DIR, observed through /proc over its whole process tree
 * (CPU seconds, peak RSS), stopped with SIGTERM as systemd would.
 */
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = path.join(repoRoot, 'dist', 'src', 'cli.js');
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** CPU seconds (user + system) in a /proc stat file: all threads of a process, or one task. */
export function statCpuSeconds(file) {
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const stat = fs.readFileSync(file, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Bytes process `pid` has passed to write syscalls so far (`wchar`: LMDB pages, blob segments). */
function bytesWritten(pid) {
  return Number(/^wchar: (\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? NaN);
}

/** CPU seconds of this process's waited-for children (the wrk runs that have ended). */
export function childrenCpuSeconds() {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS;
}

/** Peak resident set size (VmHWM) of process `pid`, in bytes. */
function peakRssBytes(pid) {
  const match = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : NaN;
}

/** `pid` and its live descendants (uvicorn's workers, for one), from /proc/<pid>/task/<tid>/children. */
export function processTree(pid) {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    let tasks = [];
    try {
      tasks = fs.readdirSync(`/proc/${tree[i]}/task`);
    } catch {
      continue; // exited meanwhile
    }
    for (const tid of tasks) {
      const children = fs.readFileSync(`/proc/${tree[i]}/task/${tid}/children`, 'utf8').trim();
      if (children) tree.push(...children.split(' ').map(Number));
    }
  }
  return tree;
}

/** Sums `read(pid)` over a process tree, skipping processes that exit while it is read. */
function sumOverTree(pids, read) {
  let total = 0;
  for (const pid of pids) {
    try {
      total += read(pid);
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

/**
 * Settings of every edge-event-store the bench starts. MAX_RECORDS is raised above the default
 * 1,000,000 so the cleanup does not trim the preloaded store while it is being measured.
 */
const STORE_SETTINGS = { HOST: '127.0.0.1', LOG_LEVEL: 'warn', API_KEY: '', MAX_RECORDS: '5000000' };

/** The store's HTTP engines (docs/OPERATIONS.md, "HTTP engines"): native uWebSockets.js, or node:http. */
export const ENGINES = ['uws', 'node'];

/**
 * The engines this machine can bench, by the store's own loader (dist/src/http/uws/uws-loader.js):
 * both where a native uWebSockets.js build loads, else node alone, with the sentence that says so
 * (a harness prints it first and writes it into its RESULTS). Node 24 on glibc older than 2.38
 * (Debian 12, Ubuntu 22.04, Jetson L4T) has no native build.
 * @returns {Promise<{ engines: Array<'uws' | 'node'>, note: string | undefined }>}
 */
export async function benchableEngines() {
  const { loadUws } = await import(path.join(repoRoot, 'dist', 'src', 'http', 'uws', 'uws-loader.js'));
  const { describeHost, uwsNeeds } = await import(path.join(repoRoot, 'dist', 'src', 'http', 'engine-choice.js'));
  const report = loadUws();
  if (report.loaded) return { engines: ENGINES, note: undefined };
  return {
    engines: ['node'],
    note: `No native uWebSockets.js build loads on ${describeHost(report.host)} (${uwsNeeds(report).join('; ')}): `
      + 'edge-event-store is benched on its node:http engine only (docs/OPERATIONS.md, "HTTP engines").',
  };
}

/**
 * The engines a harness runs: `requested` (its --engines), else every one this machine can bench.
 * Exits with the reason, never a stack trace, when `requested` names an engine that cannot run here.
 * @param {string[] | undefined} requested
 * @param {(message: string) => void} log
 * @returns {Promise<{ engines: string[], note: string | undefined }>}
 */
export async function enginesToBench(requested, log) {
  const available = await benchableEngines();
  if (available.note) log(available.note);
  const missing = (requested ?? []).filter((engine) => !available.engines.includes(engine));
  if (missing.length > 0) {
    log(`--engines=${requested.join(',')}: ${missing.join(', ')} cannot run here; --engines=node benches the node:http engine`);
    process.exit(1);
  }
  return { engines: requested ?? available.engines, note: available.note };
}

/**
 * How edge-event-store is started on `engine` (a `ServerCommand`, see ServerProcess.start).
 * HTTP_ENGINE is forced, so a run meant for uws fails instead of measuring the fallback.
 * @param {'uws' | 'node'} engine
 * @param {string} [root] the checkout whose build (`dist/src/cli.js`) runs: this repository's by
 *   default, another commit's for before/after figures by turns (sweep.js `--compare=DIR`)
 */
export function storeCommand(engine, root = repoRoot) {
  const cli = root === repoRoot ? CLI : path.join(root, 'dist', 'src', 'cli.js');
  return { command: process.execPath, args: [cli, 'serve'], cwd: root, env: { ...STORE_SETTINGS, HTTP_ENGINE: engine } };
}

/** edge-event-store on the native engine. */
export const STORE_COMMAND = storeCommand('uws');

/** A port nothing listens on now (for runs that want one of their own). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * @typedef {object} ServerCommand
 * @property {string} command executable
 * @property {string[] | ((port: number) => string[])} args its arguments (a function of the port
 *   for servers that take it on the command line)
 * @property {string} cwd
 * @property {Record<string, string>} [env] added to the environment, besides PORT and DATA_DIR
 */

/**
 * A running server process (and its children).
 * @property {number} pid
 * @property {string} url base URL, e.g. http://127.0.0.1:18001
 * @property {number} startMs from spawn to the first 200 of /health
 */
export class ServerProcess {
  constructor(child, url, dataDir) {
    this.child = child;
    this.pid = child.pid;
    this.url = url;
    this.dataDir = dataDir;
    this.output = '';
    this.stopping = false;
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.stdout.on('data', (chunk) => (this.output += chunk));
    child.stderr.on('data', (chunk) => (this.output += chunk));
    // Never leave a server behind the bench; say so when one dies on its own.
    const kill = () => this.killTree();
    process.once('exit', kill);
    this.exited.then(({ code, signal }) => {
      process.off('exit', kill);
      if (!this.stopping) console.error(`server pid ${this.pid} exited on its own (code ${code}, signal ${signal}); its output:\n${this.output}`);
    });
  }

  /**
   * Starts `server` on `port` over `dataDir` (kept as it is: pass a fresh directory for a fresh
   * server) and waits until GET /health answers 200.
   * @param {ServerCommand} server
   * @param {string} dataDir
   * @param {{ port?: number, nodeArgs?: string[] }} options port: a free one when not given;
   *   nodeArgs: put before the script when `server.command` is node (e.g. --cpu-prof)
   * @throws Error when it exits or has not answered within 60 s
   */
  static async start(server, dataDir, { port, nodeArgs = [] } = {}) {
    fs.mkdirSync(dataDir, { recursive: true });
    const listenPort = port ?? (await freePort());
    const args = typeof server.args === 'function' ? server.args(listenPort) : server.args;
    const started = performance.now();
    const child = spawn(server.command, [...(server.command === process.execPath ? nodeArgs : []), ...args], {
      cwd: server.cwd,
      env: { ...process.env, ...server.env, PORT: String(listenPort), DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const running = new ServerProcess(child, `http://127.0.0.1:${listenPort}`, dataDir);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const status = await fetch(`${running.url}/health`).then((r) => r.status, () => 0);
      if (status === 200) {
        running.startMs = performance.now() - started;
        return running;
      }
      const exited = await Promise.race([running.exited, new Promise((r) => setTimeout(() => r(null), 20))]);
      if (exited || Date.now() > deadline) {
        running.killTree();
        throw new Error(`${server.command} ${args.join(' ')} did not start: ${exited ? `exited ${JSON.stringify(exited)}` : 'no /health in 60 s'}\n${running.output}`);
      }
    }
  }

  /** GETs `route` and returns the parsed JSON; throws on a status other than 200. */
  async getJson(route) {
    const response = await fetch(this.url + route);
    const text = await response.text();
    if (response.status !== 200) throw new Error(`GET ${route} answered ${response.status}: ${text.slice(0, 200)}`);
    return JSON.parse(text);
  }

  /** Events stored (total_count of /events/count/stats, which every peer answers too). */
  async eventCount() {
    return (await this.getJson('/events/count/stats')).total_count;
  }

  /**
   * CPU seconds (all threads of all processes of the tree, and the main thread of the first),
   * peak RSS (the sum of each process's peak) and bytes written so far.
   */
  usage() {
    const tree = processTree(this.pid);
    return {
      cpuSeconds: sumOverTree(tree, (pid) => statCpuSeconds(`/proc/${pid}/stat`)),
      mainThreadCpuSeconds: statCpuSeconds(`/proc/${this.pid}/task/${this.pid}/stat`),
      peakRssBytes: sumOverTree(tree, peakRssBytes),
      writtenBytes: sumOverTree(tree, bytesWritten),
    };
  }

  /** SIGKILL to the whole tree (when the bench itself exits early). */
  killTree() {
    for (const pid of processTree(this.pid).reverse()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  /**
   * SIGKILL to the whole tree, as a crash or the OOM killer would stop it; waits for the exit.
   * @returns {Promise<void>}
   */
  async crash() {
    this.stopping = true;
    this.killTree();
    await this.exited;
  }

  /**
   * SIGTERM, as systemd stops the service; waits for the exit (SIGKILL after `timeoutMs`).
   * @returns {Promise<{ code: number | null, signal: string | null, ms: number }>} exit code
   *   (0 for a graceful stop) and how long the stop took
   */
  async stop(timeoutMs = 30_000) {
    const started = Date.now();
    this.stopping = true;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.killTree(), timeoutMs);
    const result = await this.exited;
    clearTimeout(timer);
    return { ...result, ms: Date.now() - started };
  }
}

/** edge-event-store as a ServerProcess (uploads.js, lifecycle.js). */
export const StoreProcess = {
  /**
   * Starts `node dist/src/cli.js serve` over `dataDir`.
   * @param {{ profileDir?: string, port?: number, engine?: 'uws' | 'node' }} options profileDir:
   *   run under `node --cpu-prof` writing there; port: a free one when not given; engine: the
   *   HTTP engine (default uws)
   */
  start(dataDir, { profileDir, port, engine = 'uws' } = {}) {
    if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` in ${repoRoot} (or sh setup.sh)`);
    return ServerProcess.start(storeCommand(engine), dataDir, { port, nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [] });
  },
};
