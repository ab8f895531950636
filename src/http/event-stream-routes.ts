/**
 * `GET /v2/events/stream` (docs/API.md, "Live stream"): the live event stream as Server-Sent
 * Events over a streamed response, with the list's filters and a resume point (`since` or
 * `Last-Event-ID`). The key may come as `api_key` in the query, as a browser's `EventSource`
 * cannot set headers. The subscribers themselves live in src/stream.
 */
import { parseStreamQuery } from '../events/list-query.js';
import { StreamMessage } from '../stream/stream-message.js';
import type { HeartbeatTransport } from '../stream/stream-hub.js';
import type { Exchange } from './exchange.js';
import type { Route, ServerContext } from './route-table.js';

/** An SSE comment: proxies see traffic, clients ignore it (HTML Living Standard, 9.2.6). */
const HEARTBEAT = Buffer.from(':\n\n');

/** The live stream over one SSE response. */
class SseTransport implements HeartbeatTransport {
  private ended = false;
  /** Resolves when the stream ends, by the store or because the client went away. */
  readonly done: Promise<void>;
  private markDone!: () => void;

  constructor(private readonly ex: Exchange) {
    this.done = new Promise((resolve) => { this.markDone = resolve; });
    ex.onAbort(() => this.finish());
  }

  get closed(): boolean {
    return this.ended || this.ex.aborted;
  }

  send(message: StreamMessage): boolean {
    if (this.closed) return true;
    return this.ex.write(message.sse());
  }

  drained(): Promise<void> {
    return this.closed ? Promise.resolve() : this.ex.writable();
  }

  heartbeat(): void {
    if (!this.closed) this.ex.write(HEARTBEAT);
  }

  end(last?: StreamMessage): void {
    if (this.closed) return;
    this.ex.end(last?.sse());
    this.finish();
  }

  private finish(): void {
    this.ended = true;
    this.markDone();
  }
}

/**
 * Answers the stream: 200 `text/event-stream` at once (a heartbeat flushes the head), then the
 * catch-up from the store and live messages until the client leaves or the store stops.
 * @throws AppError invalid_query (400) for a malformed filter or resume point
 */
async function eventStream(ex: Exchange, ctx: ServerContext): Promise<void> {
  const { filter, since } = parseStreamQuery(new URLSearchParams(ex.query), ex.headers.lastEventId);
  const transport = new SseTransport(ex);
  ex.startResponse(200, [
    ['Content-Type', 'text/event-stream'],
    ['Cache-Control', 'no-store'],
    // nginx would otherwise buffer the stream (its proxy_buffering documentation).
    ['X-Accel-Buffering', 'no'],
  ]);
  transport.heartbeat();
  const subscription = ctx.stream.subscribe(filter, since, transport);
  ex.onAbort(() => subscription.cancel());
  await transport.done;
}

export const eventStreamRoutes: Route[] = [
  { method: 'get', path: '/v2/events/stream', gated: 'other', keyInQuery: true, handler: (ex, ctx) => eventStream(ex, ctx) },
];

