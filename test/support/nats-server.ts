/**
 * Real NATS servers with JetStream for a test: Debian's `nats-server` (`apt-get install
 * nats-server`, 2.9.10 on bookworm; NATS_SERVER_PATH overrides where it is), one node or a
 * cluster of routed nodes on free local ports, each with its own store dir in a temp dir so a
 * node stopped or killed and started again keeps its streams.
 *
 * Debian's binary runs as the user that starts it (no privilege drop, unlike mosquitto), and
 * it needs JetStream switched on (`jetstream {}` in the config; `-js` on the command line) and
 * a store dir (default: a `nats` dir under the OS temp dir, shared by every server: never left
 * to the default here). A node is ready when its monitoring port answers
 * `/healthz?js-enabled-only=true` (JetStream is up) for a single node, or
 * `/healthz?js-server-only=true` (it knows the meta leader and is current with it) for a
 * cluster node; plain `/healthz` also waits until every stream and consumer it holds is
 * current, which is what `waitCurrent()` uses after a restart. All three exist in 2.9.10.
 *
 * This module does not import the NATS client: it only runs servers, so it compiles whether or
 * not `@nats-io/*` is installed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { requireProgram } from './host-program.js';
import { tempDataDir } from './store-server.js';
import { freePort } from './waiting.js';

/** One nats-server process: its ports and store dir stay the same across stop/kill and start. */
export interface NatsNode {
  /** The server name (`server_name`), as `streams.info(...).cluster.leader` and `replicas[].name` report it. */
  readonly name: string;
  /** Client URL, e.g. `nats://127.0.0.1:41234`. */
  readonly url: string;
  readonly port: number;
  /** Monitoring base URL (`/healthz`, `/jsz`, `/varz`). */
  readonly monitorUrl: string;
  /** The JetStream store dir (the server keeps its data under `<storeDir>/jetstream`). */
  readonly storeDir: string;
  /** The server's log file. */
  readonly logFile: string;
  /** Whether its process is running. */
  readonly running: boolean;
  /** Starts it (same port, same store dir) and waits until it is ready; no-op while it runs. */
  start(): Promise<void>;
  /** Stops it with SIGTERM (a clean shutdown: JetStream flushes its stores) and waits for the exit. */
  stop(): Promise<void>;
  /** Kills it with SIGKILL (a crash: nothing is flushed) and waits for the exit. */
  kill(): Promise<void>;
  /** Waits until plain `/healthz` is ok: every stream and consumer this node holds is current. */
  waitCurrent(timeoutMs?: number): Promise<void>;
}

/** A single JetStream server. */
export interface NatsServer extends NatsNode {
  /** `[url]`, for `connect({ servers })`. */
  readonly urls: string[];
}

/** A cluster of JetStream servers routed to each other on 127.0.0.1. */
export interface NatsCluster {
  /** Every node's client URL, for `connect({ servers })`. */
  readonly urls: string[];
  readonly nodes: NatsNode[];
  /** The node whose server name is `name` (e.g. a stream's `cluster.leader`); throws if none. */
  node(name: string): NatsNode;
  /** Stops every node still running (SIGTERM). */
  stop(): Promise<void>;
}

/** Children of this test process, killed if the process exits with any still running. */
const children = new Set<ChildProcess>();

function killChildren(): void {
  for (const child of children) child.kill('SIGKILL');
}

/** GET `url`; its status, or 0 when nothing answers. */
async function statusOf(url: string): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return { status: res.status, body: (await res.text()).trim() };
  } catch {
    return { status: 0, body: 'no answer' };
  }
}

function logTail(file: string, lines = 15): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

interface NodeSpec {
  name: string;
  port: number;
  monitorPort: number;
  storeDir: string;
  /** Cluster name, listen port and the other nodes' route ports; absent for a single node. */
  cluster?: { name: string; port: number; routes: number[] };
}

function configText(spec: NodeSpec): string {
  const lines = [
    `server_name: ${spec.name}`,
    `listen: 127.0.0.1:${spec.port}`,
    `http: 127.0.0.1:${spec.monitorPort}`,
    `jetstream {`,
    `  store_dir: ${JSON.stringify(spec.storeDir)}`,
    // Bounded so that several test servers on one machine never reserve its whole disk or RAM.
    `  max_memory_store: 256MB`,
    `  max_file_store: 2GB`,
    `}`,
  ];
  if (spec.cluster) {
    lines.push(
      `cluster {`,
      `  name: ${spec.cluster.name}`,
      `  listen: 127.0.0.1:${spec.cluster.port}`,
      `  routes: [${spec.cluster.routes.map((port) => `nats-route://127.0.0.1:${port}`).join(', ')}]`,
      `}`,
    );
  }
  return lines.join('\n') + '\n';
}

/**
 * A node handle; `start()` spawns the server and waits for `readyQuery` on its monitoring port.
 * @param readyQuery `?js-enabled-only=true` for a single node, `?js-server-only=true` for a cluster node
 */
function makeNode(executable: string, spec: NodeSpec, readyQuery: string, dir: string): NatsNode & { spawn(): void; waitReady(timeoutMs: number): Promise<void> } {
  fs.mkdirSync(spec.storeDir, { recursive: true });
  const conf = path.join(dir, `${spec.name}.conf`);
  const logFile = path.join(dir, `${spec.name}.log`);
  fs.writeFileSync(conf, configText(spec));
  const monitorUrl = `http://127.0.0.1:${spec.monitorPort}`;
  let child: ChildProcess | undefined;

  async function waitHealth(query: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) {
        throw new Error(`nats-server ${spec.name} exited before it was ready:\n${logTail(logFile)}`);
      }
      const { status, body } = await statusOf(`${monitorUrl}/healthz${query}`);
      if (status === 200) return;
      if (Date.now() > deadline) throw new Error(`nats-server ${spec.name}: /healthz${query} not ok within ${timeoutMs} ms (${status} ${body}):\n${logTail(logFile)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function exit(signal: NodeJS.Signals): Promise<void> {
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    child = undefined;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill(signal);
    const timer = setTimeout(() => running.kill('SIGKILL'), 10_000); // a stuck shutdown still ends
    await exited;
    clearTimeout(timer);
  }

  const node = {
    name: spec.name,
    url: `nats://127.0.0.1:${spec.port}`,
    port: spec.port,
    monitorUrl,
    storeDir: spec.storeDir,
    logFile,
    get running() {
      return child !== undefined && child.exitCode === null && child.signalCode === null;
    },
    spawn() {
      if (node.running) return;
      // -l: the log goes to a file (read back in errors), not to the test's output.
      const started = spawn(executable, ['-c', conf, '-l', logFile], { stdio: 'ignore' });
      if (children.size === 0) process.once('exit', killChildren);
      children.add(started);
      started.once('exit', () => children.delete(started));
      child = started;
    },
    waitReady: (timeoutMs: number) => waitHealth(readyQuery, timeoutMs),
    async start() {
      if (node.running) return;
      node.spawn();
      await node.waitReady(30_000);
    },
    stop: () => exit('SIGTERM'),
    kill: () => exit('SIGKILL'),
    waitCurrent: (timeoutMs = 30_000) => waitHealth('', timeoutMs),
  };
  return node;
}

/** Starts one JetStream server on free ports with a fresh store dir; stop it in the test's teardown. */
export async function startNatsServer(): Promise<NatsServer> {
  const executable = requireProgram('nats-server');
  const dir = tempDataDir();
  const spec: NodeSpec = { name: 'n1', port: await freePort(), monitorPort: await freePort(), storeDir: path.join(dir, 'n1') };
  const node = makeNode(executable, spec, '?js-enabled-only=true', dir);
  await node.start();
  return Object.assign(node, { urls: [node.url] }) as NatsServer;
}

/**
 * Starts `size` JetStream servers (named n1, n2, ...) routed to each other on 127.0.0.1, and waits
 * until each knows the meta leader (JetStream needs a quorum of the nodes up to elect one, so all
 * are spawned before any is waited for). Stop it in the test's teardown.
 */
export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  if (size < 1) throw new Error(`a cluster needs at least one node, not ${size}`);
  const executable = requireProgram('nats-server');
  const dir = tempDataDir();
  const clusterName = `ees-${path.basename(dir).replace(/[^A-Za-z0-9]/g, '')}`;
  const ports: Array<{ port: number; monitorPort: number; clusterPort: number }> = [];
  for (let i = 0; i < size; i++) ports.push({ port: await freePort(), monitorPort: await freePort(), clusterPort: await freePort() });
  const nodes = ports.map((p, i) => makeNode(executable, {
    name: `n${i + 1}`,
    port: p.port,
    monitorPort: p.monitorPort,
    storeDir: path.join(dir, `n${i + 1}`),
    cluster: { name: clusterName, port: p.clusterPort, routes: ports.filter((other) => other !== p).map((other) => other.clusterPort) },
  }, '?js-server-only=true', dir));
  for (const node of nodes) node.spawn();
  try {
    await Promise.all(nodes.map((node) => node.waitReady(30_000)));
  } catch (err) {
    await Promise.all(nodes.map((node) => node.kill()));
    throw err;
  }
  return {
    urls: nodes.map((node) => node.url),
    nodes,
    node(name: string) {
      const found = nodes.find((node) => node.name === name);
      if (!found) throw new Error(`no node named ${JSON.stringify(name)} in this cluster (${nodes.map((node) => node.name).join(', ')})`);
      return found;
    },
    async stop() {
      await Promise.all(nodes.map((node) => node.stop()));
    },
  };
}
