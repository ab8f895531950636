/**
 * What stream.js runs in its own process beside wrk and the subscribers: the latency probe (one
 * event every ~20 ms, the time of each 201 noted), the /metrics scraper (every 250 ms, each
 * scrape timed) and the stalled subscriber (opens the stream and never reads). All three are
 * light, so the main process's event loop stays free and their timings are its own.
 */
import http from 'node:http';
import net from 'node:net';
import { monotonicNs, PROBE_STREAM_ID } from './stream-subscribers.js';

/** The end of a chunked HTTP body (RFC 9112, 7.1): the stream's response is over. */
const LAST_CHUNK = '\r\n0\r\n\r\n';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * p50, p99 and max of `values` (nearest rank), and how many there were.
 * @returns {{ count: number, p50: number, p99: number, max: number } | undefined} undefined when empty
 */
export function summarise(values) {
  if (values.length === 0) return undefined;
  const sorted = Float64Array.from(values).sort();
  const rank = (p) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
  return { count: sorted.length, p50: rank(50), p99: rank(99), max: sorted[sorted.length - 1] };
}

/** A small event of `device` marked as a probe's (its stream_id, which subscribers look for). */
function probeBody(device, n) {
  return JSON.stringify({
    solution: 'bench',
    workflow_id: 'inspection-1',
    inference_timestamp: new Date().toISOString(),
    device_id: device,
    stream_id: PROBE_STREAM_ID,
    image_id: `probe-${n}`,
    event_schema: 'quality_check',
    event_data: { result: 'pass', externalId: `probe-${n}` },
    custom_metadata: { line: 'A', probe: n },
  });
}

/**
 * Posts one probe event every `intervalMs` (one at a time; a late answer delays the next) and
 * notes, for each, its id and the monotonic time its 201 arrived.
 */
/** Work repeated in the background from `start()` until `stop()`: a subclass's `run()` loops while `running`. */
class BackgroundLoop {
  running = false;

  start() {
    this.running = true;
    this.loop = this.run();
    return this;
  }

  /** Ends the loop after the round in flight; resolves once it has. */
  async stop() {
    this.running = false;
    await this.loop;
  }
}

export class LatencyProbe extends BackgroundLoop {
  /** @param {{ url: string, device: string, intervalMs?: number }} options */
  constructor({ url, device, intervalMs = 20 }) {
    super();
    Object.assign(this, { url, device, intervalMs });
    /** @type {{ id: string, ackNs: number }[]} */
    this.events = [];
    /** ms from sending each probe to its 201 (the probe's own ingest latency). */
    this.ackMs = [];
    this.failures = 0;
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  }

  /** Stops after the probe in flight; resolves once it is answered. */
  async stop() {
    await super.stop();
    this.agent.destroy();
  }

  async run() {
    const started = performance.now();
    for (let n = 0; this.running; n++) {
      await this.postOne(n);
      const next = started + (n + 1) * this.intervalMs;
      if (next > performance.now()) await sleep(next - performance.now());
    }
  }

  /** Posts probe `n`; a failure is counted, not thrown (the phase goes on). */
  async postOne(n) {
    const sent = performance.now();
    try {
      const { status, ackNs, body } = await post(this.agent, `${this.url}/v2/events`, probeBody(this.device, n));
      if (status !== 201) throw new Error(`probe answered ${status}`);
      this.events.push({ id: JSON.parse(body).id, ackNs });
      this.ackMs.push(performance.now() - sent);
    } catch {
      this.failures++;
    }
  }
}

/**
 * POSTs a JSON `body` over node:http (lighter than fetch, so the time noted is close to the
 * answer's arrival).
 * @returns {Promise<{ status: number, ackNs: number, body: string }>} ackNs: monotonic ns when the
 *   answer's head was parsed (the small body comes in the same segment)
 */
function post(agent, url, body) {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (response) => {
      const ackNs = monotonicNs();
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode, ackNs, body: text }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** The value of the unlabelled sample `name` in a Prometheus text exposition (NaN when absent). */
export function metricValue(text, name) {
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : NaN;
}

/**
 * Scrapes GET /metrics every `intervalMs`, timing each scrape (request to last body byte), and
 * watches the stream's subscriber gauge and dropped counter.
 */
export class MetricsScraper extends BackgroundLoop {
  /** @param {{ url: string, intervalMs?: number }} options */
  constructor({ url, intervalMs = 250 }) {
    super();
    Object.assign(this, { url, intervalMs });
    /** @type {{ ms: number, bytes: number, loaded: boolean }[]} */
    this.scrapes = [];
    /** Whether the store is under load now: set by the phase, copied into each scrape. */
    this.loaded = false;
    this.subscribers = NaN;
    this.dropped = NaN;
    /** Monotonic ns of the first scrape that saw the dropped counter above its first value. */
    this.droppedAtNs = undefined;
    this.failures = 0;
  }

  async run() {
    let droppedAtStart;
    while (this.running) {
      const started = performance.now();
      await this.scrapeOnce();
      droppedAtStart ??= this.dropped;
      if (this.droppedAtNs === undefined && this.dropped > droppedAtStart) this.droppedAtNs = monotonicNs();
      const wait = this.intervalMs - (performance.now() - started);
      if (wait > 0 && this.running) await sleep(wait);
    }
  }

  /** One timed scrape; notes the stream metrics it carries. */
  async scrapeOnce() {
    const loaded = this.loaded;
    const started = performance.now();
    try {
      const response = await fetch(`${this.url}/metrics`);
      const text = await response.text();
      const ms = performance.now() - started;
      if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
      this.scrapes.push({ ms, bytes: Buffer.byteLength(text), loaded });
      this.subscribers = metricValue(text, 'edge_events_stream_subscribers');
      this.dropped = metricValue(text, 'edge_events_stream_subscribers_dropped_total');
    } catch {
      this.failures++;
    }
  }

  /** Scrape latencies (ms) and body size of the scrapes made under load. */
  underLoad() {
    const loaded = this.scrapes.filter((s) => s.loaded);
    return { ms: summarise(loaded.map((s) => s.ms)), bytes: loaded.at(-1)?.bytes, failures: this.failures };
  }
}

/**
 * A subscriber that opens the SSE stream over a raw socket and never reads it (the socket is
 * paused before it connects), so the store's buffers for it fill up until it is dropped.
 */
export class StalledSubscriber {
  /** Connects to the store at `url` and sends `GET {path}`; resolves once the request is sent. */
  static open(url, path = '/v2/events/stream') {
    const { hostname, port } = new URL(url);
    const stalled = new StalledSubscriber();
    stalled.openedAtNs = monotonicNs();
    stalled.socket = net.connect({ host: hostname, port: Number(port) });
    stalled.socket.pause();
    return new Promise((resolve, reject) => {
      stalled.socket.once('error', reject);
      stalled.socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\n\r\n`, () => resolve(stalled));
    });
  }

  /**
   * Reads what the store left for it: everything buffered, until the store ends the stream or
   * `timeoutMs` passes.
   * @returns {Promise<{ bytes: number, ended: boolean, responseEnded: boolean, closed: object | undefined, tail: string }>}
   *   bytes read; whether the store closed the connection; whether the response ended (its last
   *   chunk came: uWS keeps the connection open after it); the data of its last `closed` message,
   *   if any; the last bytes read (latin1, HTTP chunk framing included)
   */
  finish(timeoutMs = 3000) {
    const socket = this.socket;
    let bytes = 0;
    let tail = '';
    let settled = false;
    return new Promise((resolve) => {
      const done = (ended) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        const closed = /event: closed\r?\n(?:[^\n]*\r?\n)*?data: *([^\n]*)/.exec(tail.slice(tail.lastIndexOf('event: closed')));
        resolve({
          bytes,
          ended,
          responseEnded: tail.endsWith(LAST_CHUNK),
          closed: closed ? JSON.parse(closed[1].replace(/\r$/, '')) : undefined,
          tail: tail.slice(-300),
        });
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      socket.on('data', (chunk) => {
        bytes += chunk.length;
        tail = (tail + chunk.toString('latin1')).slice(-16_384);
        if (tail.endsWith(LAST_CHUNK)) done(false);
      });
      socket.once('close', () => done(true));
      socket.resume();
    });
  }
}
