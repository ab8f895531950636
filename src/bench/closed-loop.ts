/**
 * A closed-loop HTTP client (`edge-events bench`; native-bench/sweep.js through
 * native-bench/lib/closed-loop.js): exactly `inFlight` requests outstanding at any time, as
 * `inFlight` devices each posting an event and waiting for its 201 before posting the next.
 * node:http with a keep-alive Agent of `inFlight` sockets, so each loop keeps its connection.
 * `runPaced` is one such device at a pipeline's pace: one event at a time, `rate` a second.
 */
import http from 'node:http';
import { setTimeout as pause } from 'node:timers/promises';

/** The figures of one run. */
export interface ClosedLoopRun {
  /** Requests answered 201 within the run. */
  requests: number;
  /** From the first post to the last answer, s (the loops finish the request they have in flight when the time is up). */
  seconds: number;
  /** requests / seconds. */
  rate: number;
  /** Median latency, ms (post to the answer's last byte). */
  p50Ms: number;
  /** 99th percentile latency, ms (nearest rank over every request). */
  p99Ms: number;
  /** This process's user + system CPU over the run, s. */
  clientCpuSeconds: number;
}

/** What a run posts, and where. */
export interface LoopOptions {
  /** The create route, e.g. http://127.0.0.1:18001/v2/events. */
  url: string;
  /** Bodies posted in turn. */
  bodies: Buffer[];
  /** How long the run lasts, s. */
  seconds: number;
  /** From closedLoopAgent: shared by a warm-up and the measured run, so the measured one starts on open connections. */
  agent: http.Agent;
}

/** A keep-alive Agent of `inFlight` sockets, each kept open between a loop's requests. */
export function closedLoopAgent(inFlight: number): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: inFlight, maxFreeSockets: inFlight });
}

/** The `q` quantile (0..1) of ascending `sorted`, by nearest rank; NaN when empty. */
export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/**
 * POSTs one body as JSON.
 * @param status the answer expected (201 for a create, 200 for a finalize)
 * @returns the latency in ms once the whole answer is read, and the answer's text
 * @throws Error naming the status and the start of the answer on any other status (a run fails:
 *   an error is not a figure), or the connection's error
 */
export function post(agent: http.Agent, url: string, body: Buffer | string, status = 201): Promise<{ ms: number; body: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = http.request(url, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        if (response.statusCode === status) return resolve({ ms: performance.now() - started, body: text });
        reject(new Error(`POST ${url} answered ${response.statusCode}: ${text.slice(0, 300)}`));
      });
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** The figures of a run from its latencies (ms), its start (`performance.now()`) and the client's CPU then. */
function runFigures(latencies: number[], started: number, cpu0: NodeJS.CpuUsage): ClosedLoopRun {
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    seconds: elapsed,
    rate: latencies.length / elapsed,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    clientCpuSeconds: (cpu.user + cpu.system) / 1e6,
  };
}

/**
 * Posts `bodies` (in turn) one at a time for `seconds`, the k-th at `k / rate` s after the start,
 * or as soon as the one before is answered when that is later: a pipeline that posts an event
 * whenever its camera yields one and waits for the 201.
 * @param options.rate events offered a second; `agent` from closedLoopAgent(1)
 * @throws Error on the first non-201 answer or connection error (the agent is destroyed then)
 */
export async function runPaced({ url, bodies, rate, seconds, agent }: LoopOptions & { rate: number }): Promise<ClosedLoopRun> {
  const latencies: number[] = [];
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  try {
    for (let k = 0; ; k++) {
      const due = started + (k * 1000) / rate;
      if (due >= deadline) break;
      const wait = due - performance.now();
      if (wait > 0) await pause(wait);
      latencies.push((await post(agent, url, bodies[k % bodies.length])).ms);
    }
  } catch (error) {
    agent.destroy();
    throw error;
  }
  return runFigures(latencies, started, cpu0);
}

/**
 * Runs `inFlight` loops posting `bodies` (in turn, each loop from its own offset) for `seconds`.
 * @param options.agent from closedLoopAgent(inFlight)
 * @throws Error on the first non-201 answer or connection error (the agent is destroyed then)
 */
export async function runClosedLoop({ url, bodies, inFlight, seconds, agent }: LoopOptions & { inFlight: number }): Promise<ClosedLoopRun> {
  const latencies: number[] = [];
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let failed: unknown = null;
  const loop = async (index: number) => {
    for (let i = index; performance.now() < deadline && !failed; i += inFlight) {
      latencies.push((await post(agent, url, bodies[i % bodies.length])).ms);
    }
  };
  try {
    await Promise.all(Array.from({ length: inFlight }, (_, i) => loop(i).catch((error: unknown) => {
      failed ??= error;
      throw error;
    })));
  } catch (error) {
    agent.destroy();
    throw error;
  }
  return runFigures(latencies, started, cpu0);
}
