/**
 * The store under test: started by the bench from the repository's dist/ on a free port with its
 * own DATA_DIR, observed through /proc (CPU seconds, peak RSS), stopped with SIGTERM as systemd
 * would.
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
function statCpuSeconds(file) {
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

/**
 * Settings of every store the bench starts. MAX_RECORDS is raised above the default 1,000,000
 * so the cleanup does not trim the preloaded store while it is being measured.
 */
const STORE_SETTINGS = { HOST: '127.0.0.1', LOG_LEVEL: 'warn', API_KEY: '', MAX_RECORDS: '5000000' };

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * A running store process.
 * @property {number} pid
 * @property {string} url base URL, e.g. http://127.0.0.1:40123
 */
export class StoreProcess {
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
    // Never leave a store behind the bench; say so when one dies on its own.
    const kill = () => child.kill('SIGKILL');
    process.once('exit', kill);
    this.exited.then(({ code, signal }) => {
      process.off('exit', kill);
      if (!this.stopping) console.error(`store pid ${this.pid} exited on its own (code ${code}, signal ${signal}); its output:\n${this.output}`);
    });
  }

  /**
   * Starts `node dist/src/cli.js serve` on a free port over `dataDir` (kept as it is: pass a
   * fresh directory for a fresh store) and waits until /health answers 200.
   * @param {string} dataDir
   * @param {{ profileDir?: string }} options profileDir: run under `node --cpu-prof` writing there
   */
  static async start(dataDir, { profileDir } = {}) {
    if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` in ${repoRoot} (or sh setup.sh)`);
    fs.mkdirSync(dataDir, { recursive: true });
    const port = await freePort();
    const nodeArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
    const child = spawn(process.execPath, [...nodeArgs, CLI, 'serve'], {
      cwd: repoRoot,
      env: { ...process.env, ...STORE_SETTINGS, PORT: String(port), DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const store = new StoreProcess(child, `http://127.0.0.1:${port}`, dataDir);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const status = await fetch(`${store.url}/health`).then((r) => r.status, () => 0);
      if (status === 200) return store;
      const exited = await Promise.race([store.exited, new Promise((r) => setTimeout(() => r(null), 100))]);
      if (exited || Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`store did not start: ${exited ? `exited ${JSON.stringify(exited)}` : 'no /health in 30 s'}\n${store.output}`);
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

  /** Events in the store (total_count of /events/count/stats). */
  async eventCount() {
    return (await this.getJson('/events/count/stats')).total_count;
  }

  /** CPU seconds (all threads, and the main JavaScript thread), peak RSS and bytes written so far. */
  usage() {
    return {
      cpuSeconds: statCpuSeconds(`/proc/${this.pid}/stat`),
      mainThreadCpuSeconds: statCpuSeconds(`/proc/${this.pid}/task/${this.pid}/stat`),
      peakRssBytes: peakRssBytes(this.pid),
      writtenBytes: bytesWritten(this.pid),
    };
  }

  /**
   * SIGTERM, as systemd stops the service; waits for the exit.
   * @returns {Promise<{ code: number | null, signal: string | null, ms: number }>} exit code
   *   (0 for a graceful stop) and how long the stop took
   */
  async stop(timeoutMs = 30_000) {
    const started = Date.now();
    this.stopping = true;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const result = await this.exited;
    clearTimeout(timer);
    return { ...result, ms: Date.now() - started };
  }
}
