/**
 * `GET /v2/events/stream` (docs/API.md, "Live stream"): the live event stream as Server-Sent
 * Events over a streamed response, with the list's filters and a resume point (`since` or
 * `Last-Event-ID`), and on the same path with an Upgrade, as a WebSocket (native engine). The key
 * may come as `api_key` in the query, as a browser's `EventSource` or `WebSocket` cannot set
 * headers. The subscribers themselves live in src/stream.
 */
import { parseStreamQuery } from '../events/list-query.js';
import { StreamMessage } from '../stream/stream-message.js';
import type { HeartbeatTransport } from '../stream/stream-fanout.js';
import type { EngineWebSocket, WebSocketEndpoint, WebSocketSession } from './engine.js';
import type { Exchange, ResponseStream } from './exchange.js';
import { STRING } from './route-docs.js';
import type { Admission, Route, ServerContext } from './route-table.js';
import { readParamDocs } from './read-param-docs.js';
import { WriteCoalescer } from './write-coalescer.js';

/** An SSE comment: proxies see traffic, clients ignore it (HTML Living Standard, 9.2.6). */
const HEARTBEAT = Buffer.from(':\n\n');

/** The live stream over one SSE response; the frames of one turn go out in one write. */
class SseTransport implements HeartbeatTransport {
  private ended = false;
  private readonly writes: WriteCoalescer;
  /** Resolves when the stream ends, by the store or because the client went away. */
  readonly done: Promise<void>;
  private markDone!: () => void;

  constructor(ex: Exchange, private readonly response: ResponseStream) {
    this.done = new Promise((resolve) => { this.markDone = resolve; });
    this.writes = new WriteCoalescer((frames) => this.closed || response.write(frames.length === 1 ? frames[0]! : Buffer.concat(frames)));
    ex.onAbort(() => this.finish());
  }

  get closed(): boolean {
    return this.ended || this.response.aborted;
  }

  send(message: StreamMessage): boolean {
    return this.closed || this.writes.add(message.sse());
  }

  async drained(): Promise<void> {
    if (this.closed) return;
    await this.response.writable();
    this.writes.caughtUp();
  }

  heartbeat(): void {
    if (!this.closed) this.writes.add(HEARTBEAT);
  }

  end(last?: StreamMessage): void {
    if (this.closed) return;
    this.writes.flush();
    this.response.end(last?.sse());
    this.finish();
  }

  private finish(): void {
    this.ended = true;
    this.markDone();
  }
}

/**
 * The live stream over one WebSocket: messages `{"type", "id"?, "data"}` (StreamMessage.ws); the
 * messages of one turn go out in one write.
 */
class WebSocketTransport implements HeartbeatTransport {
  private ended = false;
  private wake: (() => void) | undefined;
  private readonly writes: WriteCoalescer;

  constructor(private readonly socket: EngineWebSocket) {
    this.writes = new WriteCoalescer((messages) => this.ended || socket.sendAll(messages));
  }

  get closed(): boolean {
    return this.ended;
  }

  send(message: StreamMessage): boolean {
    return this.ended || this.writes.add(message.ws());
  }

  drained(): Promise<void> {
    if (this.ended) return Promise.resolve();
    return new Promise((resolve) => { this.wake = resolve; });
  }

  /** The engine pings idle WebSockets itself. */
  heartbeat(): void {}

  end(last?: StreamMessage): void {
    if (this.ended) return;
    this.writes.flush();
    if (last) this.socket.sendAll([last.ws()]);
    this.ended = true;
    this.socket.end(1000, last ? last.type : 'end');
    this.drain();
  }

  /** The client caught up, or the socket closed. */
  drain(): void {
    this.writes.caughtUp();
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** The socket closed (either side). */
  close(): void {
    this.ended = true;
    this.drain();
  }
}

/**
 * The stream's WebSocket endpoint: an upgrade passes the same checks as the SSE route, with a
 * browser's cross-origin upgrade refused (a WebSocket is outside CORS's reach), and the same
 * filters; refusals are answered as HTTP errors before any upgrade.
 */
export function eventStreamSocket(ctx: ServerContext, { admit }: Admission): WebSocketEndpoint {
  const logError = (err: unknown) => ctx.log.error({ err }, 'request failed');
  return {
    upgrade(ex: Exchange): WebSocketSession | undefined {
      let request: ReturnType<typeof parseStreamQuery>;
      try {
        const refused = admit(ex, eventStreamRoutes[0], true);
        if (refused) throw refused;
        request = parseStreamQuery(new URLSearchParams(ex.query), ex.headers.lastEventId);
      } catch (err) {
        ex.fail(err, logError);
        return undefined;
      }
      let transport: WebSocketTransport | undefined;
      let cancel: (() => void) | undefined;
      return {
        open(socket) {
          transport = new WebSocketTransport(socket);
          const subscription = ctx.stream.subscribe(request.filter, request.since, transport);
          cancel = () => subscription.cancel();
        },
        drain: () => transport?.drain(),
        close() {
          transport?.close();
          cancel?.();
        },
      };
    },
  };
}

/**
 * Answers the stream: 200 `text/event-stream` at once (a heartbeat flushes the head), then the
 * catch-up from the store and live messages until the client leaves or the store stops.
 * @throws AppError invalid_query (400) for a malformed filter or resume point
 */
async function eventStream(ex: Exchange, ctx: ServerContext): Promise<void> {
  const { filter, since } = parseStreamQuery(new URLSearchParams(ex.query), ex.headers.lastEventId);
  const response = ex.takeOver();
  const transport = new SseTransport(ex, response);
  response.start(200, [
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

/** The list's filters; limit, order and time bounds do not apply to a stream. */
export const eventStreamRoutes: Route[] = [
  {
    method: 'get',
    path: '/v2/events/stream',
    gated: 'other',
    keyInQuery: true,
    refusesCrossOrigin: true,
    doc: {
      tag: 'events',
      summary: 'Live stream of event changes (Server-Sent Events)',
      operationId: 'streamEvents',
      description:
        'Stays open. event: created (id: the event\'s created_at), finalized, files_attached (data: the stored event JSON), '
        + 'deleted ({"id", "reason"}), closed ({"reason", "since"}: the last message of a stream the store ends). With since or '
        + 'Last-Event-ID, every stored matching event created after it comes first, then live changes, none missed or repeated. '
        + 'See docs/API.md, "Live stream".',
      parameters: [
        ...readParamDocs('stream'),
        { name: 'Last-Event-ID', in: 'header', required: false, schema: STRING, description: 'Resume point an EventSource sends on reconnecting: the id of the last created message.' },
      ],
      responses: { 200: { description: 'The stream.', content: { 'text/event-stream': { schema: STRING } } } },
      errors: { invalid_query: 'Malformed filter, since or Last-Event-ID.' },
    },
    handler: (ex, ctx) => eventStream(ex, ctx),
  },
];

