/**
 * Subscribers of the store's live stream (`GET /v2/events/stream`, docs/API.md "Live stream"),
 * run in a worker thread of the clients process (lib/stream-clients.js): Server-Sent Events over
 * node:http, and WebSockets over the `ws` package (the repository's devDependency; Node 20 has no
 * global WebSocket). Each counts the `created` messages it gets and records when each probe
 * event arrives (stream.js posts them; they carry PROBE_MARKER), on the machine-wide monotonic
 * clock, so stream.js can set the arrivals against the times of the probe's 201s.
 *
 * Messages are not parsed as JSON: a subscriber looks for frame ends and the probe marker with
 * Buffer.indexOf (native), so the clients cost little CPU beside the store on a small machine.
 */
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import WebSocket from 'ws';

/** What marks a probe event in its stored JSON (stream.js posts it as the probe's stream_id). */
export const PROBE_STREAM_ID = 'latency-probe';
const PROBE_MARKER = Buffer.from(`"stream_id":"${PROBE_STREAM_ID}"`);
const FRAME_END = Buffer.from('\n\n');
const ID_FIELD = Buffer.from('{"id":"');
const CLOSED_FRAME = Buffer.from('event: closed\n');
const WS_CREATED = Buffer.from('{"type":"created"');
const WS_CLOSED = Buffer.from('{"type":"closed"');
const WS_DATA_ID = Buffer.from('"data":{"id":"');

/**
 * Nanoseconds on CLOCK_MONOTONIC: process.hrtime reads the system-wide monotonic clock, so
 * values from different threads and processes of one machine compare (performance.now() does
 * not: its origin is per process and per thread).
 */
export const monotonicNs = () => Number(process.hrtime.bigint());

/** The event id that follows `field` (`{"id":"` or `"data":{"id":"`) at or after `from` in `buf`. */
function idAfter(buf, field, from) {
  const start = buf.indexOf(field, from);
  if (start < 0) return undefined;
  const first = start + field.length;
  return buf.toString('latin1', first, buf.indexOf(0x22, first));
}

/**
 * What one subscriber saw: `created` messages, bytes, probe arrivals (event id -> monotonic ns),
 * and how its stream ended (`closed` message, error) if it did.
 */
class Tally {
  constructor(spec) {
    this.spec = spec;
    this.created = 0;
    this.bytes = 0;
    this.probes = [];
    this.closed = undefined;
    this.error = undefined;
    this.endedAtNs = undefined;
  }

  /** Records a probe event that arrived at `atNs`. */
  probe(id, atNs) {
    this.probes.push([id, atNs]);
  }

  /** The stream ended (`closed` is the store's last message, when it sent one). */
  end(closed, error) {
    if (this.endedAtNs !== undefined) return;
    this.endedAtNs = monotonicNs();
    this.closed = closed;
    this.error = error;
  }

  report() {
    const { spec, created, bytes, probes, closed, error, endedAtNs } = this;
    return { ...spec, created, bytes, probes, closed, error, endedAtNs };
  }
}

/** One SSE subscriber over its own connection. */
class SseSubscriber extends Tally {
  /** Opens `GET {url}{spec.path}`; resolves once the 200 head arrived (the subscription is live then). */
  open(url) {
    this.tail = Buffer.alloc(0);
    return new Promise((resolve, reject) => {
      this.request = http.get(url + this.spec.path, { agent: false, headers: { accept: 'text/event-stream' } }, (response) => {
        if (response.statusCode !== 200) {
          reject(new Error(`SSE ${this.spec.path} answered ${response.statusCode}`));
          response.destroy();
          return;
        }
        response.on('data', (chunk) => this.receive(chunk, monotonicNs()));
        response.on('end', () => this.end(this.closed, 'stream ended'));
        response.on('error', (err) => this.end(this.closed, err.message));
        resolve();
      });
      this.request.on('error', (err) => {
        this.end(this.closed, err.message);
        reject(err);
      });
    });
  }

  /** Counts the complete frames of `chunk` (and the tail kept from the last one), noting probes. */
  receive(chunk, atNs) {
    this.bytes += chunk.length;
    const buf = this.tail.length > 0 ? Buffer.concat([this.tail, chunk]) : chunk;
    let pos = 0;
    let probeAt = buf.indexOf(PROBE_MARKER);
    for (let end = buf.indexOf(FRAME_END, pos); end >= 0; end = buf.indexOf(FRAME_END, pos)) {
      // A created frame starts with its `id:` line, `closed` with its `event:` line, a heartbeat with `:`.
      if (buf[pos] === 0x69 /* i */) {
        this.created++;
        if (probeAt >= 0 && probeAt < end) {
          this.probe(idAfter(buf, ID_FIELD, pos), atNs);
          probeAt = buf.indexOf(PROBE_MARKER, end);
        }
      } else if (buf.indexOf(CLOSED_FRAME, pos) === pos) {
        this.closed = JSON.parse(buf.toString('utf8', buf.indexOf('{', pos), end));
      }
      pos = end + FRAME_END.length;
    }
    this.tail = Buffer.from(buf.subarray(pos));
  }

  close() {
    this.request?.destroy();
  }
}

/** One WebSocket subscriber (messages `{"type", "id"?, "data"}`). */
class WsSubscriber extends Tally {
  /** Opens the WebSocket; resolves once it is open (the store subscribed it on the upgrade). */
  open(url) {
    return new Promise((resolve, reject) => {
      this.socket = new WebSocket(url.replace(/^http/, 'ws') + this.spec.path, { perMessageDeflate: false });
      this.socket.on('open', resolve);
      this.socket.on('message', (data) => this.receive(data, monotonicNs()));
      this.socket.on('close', (code, reason) => this.end(this.closed, `closed ${code} ${reason}`));
      this.socket.on('error', (err) => {
        this.end(this.closed, err.message);
        reject(err);
      });
    });
  }

  /** Counts a `created` message, noting a probe's arrival. */
  receive(data, atNs) {
    this.bytes += data.length;
    if (data.indexOf(WS_CREATED) === 0) {
      this.created++;
      if (data.indexOf(PROBE_MARKER) >= 0) this.probe(idAfter(data, WS_DATA_ID, 0), atNs);
    } else if (data.indexOf(WS_CLOSED) === 0) {
      this.closed = JSON.parse(data.toString('utf8')).data;
    }
  }

  close() {
    this.socket?.terminate();
  }
}

/**
 * The worker: opens `workerData.subscribers` against `workerData.url`, posts `ready` once every
 * one is open, and on `report` posts what each saw and closes them.
 */
async function runWorker({ url, subscribers }) {
  const all = subscribers.map((spec) => (spec.kind === 'ws' ? new WsSubscriber(spec) : new SseSubscriber(spec)));
  parentPort.on('message', (message) => {
    if (message.type !== 'report') return;
    parentPort.postMessage({ type: 'report', subscribers: all.map((s) => s.report()) });
    for (const subscriber of all) subscriber.close();
    parentPort.close();
  });
  try {
    await Promise.all(all.map((subscriber) => subscriber.open(url)));
    parentPort.postMessage({ type: 'ready' });
  } catch (err) {
    parentPort.postMessage({ type: 'error', message: err.message });
  }
}

if (parentPort && workerData?.role === 'stream-subscribers') await runWorker(workerData);
