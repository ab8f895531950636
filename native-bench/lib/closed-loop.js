/**
 * A closed-loop HTTP client (sweep.js): exactly `inFlight` requests outstanding at any time, as
 * `inFlight` devices each posting an event and waiting for its 201 before posting the next.
 * node:http with a keep-alive Agent of `inFlight` sockets, so each loop keeps its connection.
 * `runPaced` is one such device at a pipeline's pace: one event at a time, `rate` a second.
 */
import http from 'node:http';

/**
 * @typedef {object} ClosedLoopRun
 * @property {number} requests answered 201 within the run
 * @property {number} seconds from the first post to the last answer (the loops finish the request
 *   they have in flight when the time is up)
 * @property {number} rate requests / seconds
 * @property {number} p50Ms median latency, ms (post to the answer's last byte)
 * @property {number} p99Ms 99th percentile latency, ms (nearest rank over every request)
 * @property {number} clientCpuSeconds this process's user + system CPU over the run, s
 */

/** A keep-alive Agent of `inFlight` sockets, each kept open between a loop's requests. */
export function closedLoopAgent(inFlight) {
  return new http.Agent({ keepAlive: true, maxSockets: inFlight, maxFreeSockets: inFlight });
}

/** The `q` quantile (0..1) of ascending `sorted`, by nearest rank. */
export function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/**
 * POSTs one body; resolves with the latency in ms once the whole answer is read, and the answer.
 * @param {number} [status] the answer expected (201 for a create, 200 for a finalize)
 * @returns {Promise<{ ms: number, body: string }>}
 * @throws Error on any other status (the run fails: an error is not a figure)
 */
export function post(agent, url, body, status = 201) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = http.request(url, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': body.length },
    }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
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
function runFigures(latencies, started, cpu0) {
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
 * Posts `bodies` (in turn) to `url` one at a time for `seconds`, the k-th at `k / rate` s after
 * the start, or as soon as the one before is answered when that is later: a pipeline that posts an
 * event whenever its camera yields one and waits for the 201.
 * @param {{ url: string, bodies: Buffer[], rate: number, seconds: number, agent: http.Agent }} options
 *   rate: events offered a second; agent: from closedLoopAgent(1)
 * @returns {Promise<ClosedLoopRun>}
 * @throws Error on the first non-201 answer or connection error (the agent is destroyed then)
 */
export async function runPaced({ url, bodies, rate, seconds, agent }) {
  const latencies = [];
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  try {
    for (let k = 0; ; k++) {
      const due = started + (k * 1000) / rate;
      if (due >= deadline) break;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      latencies.push((await post(agent, url, bodies[k % bodies.length])).ms);
    }
  } catch (error) {
    agent.destroy();
    throw error;
  }
  return runFigures(latencies, started, cpu0);
}

/**
 * Runs `inFlight` loops posting `bodies` (in turn, each loop from its own offset) to `url` for
 * `seconds`.
 * @param {{ url: string, bodies: Buffer[], inFlight: number, seconds: number, agent: http.Agent }} options
 *   url: the create route, e.g. http://127.0.0.1:18001/v2/events; agent: from closedLoopAgent(inFlight),
 *   shared by the warm-up and the measured run so the measured one starts on open connections
 * @returns {Promise<ClosedLoopRun>}
 * @throws Error on the first non-201 answer or connection error (the agent is destroyed then)
 */
export async function runClosedLoop({ url, bodies, inFlight, seconds, agent }) {
  const latencies = [];
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let failed = null;
  const loop = async (index) => {
    for (let i = index; performance.now() < deadline && !failed; i += inFlight) {
      latencies.push((await post(agent, url, bodies[i % bodies.length])).ms);
    }
  };
  try {
    await Promise.all(Array.from({ length: inFlight }, (_, i) => loop(i).catch((error) => {
      failed ??= error;
      throw error;
    })));
  } catch (error) {
    agent.destroy();
    throw error;
  }
  return runFigures(latencies, started, cpu0);
}
