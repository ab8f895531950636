/**
 * A stand-in for the public cloud Vision Events API on a real local HTTP server (node:http,
 * port 0): `POST /vision-events/upload` (multipart `file` and `name`, parsed with busboy; 201
 * `{success, sourceId, url}`) and `POST /vision-events/batch` (`{events}`, at most 100; 201
 * `{created, eventIds}`). It checks `Authorization: Bearer <key>` (401 otherwise), keeps one copy
 * per eventId (a re-sent event replaces the earlier one, as the real API does), and lets a test
 * inject failures: a status (with headers, e.g. Retry-After), a hang, or a closed connection.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import busboy from 'busboy';

export const UPLOAD_PATH = '/vision-events/upload';
export const BATCH_PATH = '/vision-events/batch';

/** An image the cloud received. */
export interface ReceivedImage {
  sourceId: string;
  name: string | undefined;
  filename: string;
  contentType: string;
  bytes: Buffer;
}

/** One request as the cloud saw it and what it answered. */
export interface SeenRequest {
  path: string;
  /** A status, or `hang` / `close` for an injected network failure. */
  answer: number | 'hang' | 'close';
  /** ms since the epoch when the answer was decided. */
  at: number;
  /** The eventIds of a batch request. */
  eventIds?: string[];
}

/** A failure to inject. */
export type Fault =
  | { status: number; headers?: Record<string, string> }
  | 'hang'
  | 'close';

interface ActiveFault {
  fault: Fault;
  path: string | undefined;
  left: number;
}

export class FakeCloud {
  /** Images received, in order. */
  readonly images: ReceivedImage[] = [];
  /** The latest copy of each event, by eventId. */
  readonly events = new Map<string, Record<string, any>>();
  /** eventIds in the order the cloud first accepted them. */
  readonly order: string[] = [];
  /** How many accepted batches carried each eventId. */
  readonly deliveries = new Map<string, number>();
  readonly requests: SeenRequest[] = [];
  private faults: ActiveFault[] = [];
  private readonly refusedEvents = new Map<string, number>();
  private readonly server: http.Server;

  private constructor(readonly apiKey: string) {
    this.server = http.createServer((req, res) => this.handle(req, res));
  }

  /** Starts a fake cloud on 127.0.0.1, port 0, accepting `apiKey`. */
  static async start(apiKey = 'cloud-key'): Promise<FakeCloud> {
    const cloud = new FakeCloud(apiKey);
    await new Promise<void>((resolve) => cloud.server.listen(0, '127.0.0.1', resolve));
    return cloud;
  }

  /** The base URL, for CLOUD_UPLOAD_URL. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /**
   * Answers the next `times` requests (to `path`, or to any path) with `fault`.
   * @param times how many requests (default: every one until `heal`)
   */
  inject(fault: Fault, { path, times = Infinity }: { path?: string; times?: number } = {}): void {
    this.faults.push({ fault, path, left: times });
  }

  /** Removes every injected fault (refused events stay refused). */
  heal(): void {
    this.faults = [];
  }

  /** Refuses every batch that carries `eventId` with `status` (400 by default), as a validation error would. */
  refuseEvent(eventId: string, status = 400): void {
    this.refusedEvents.set(eventId, status);
  }

  /** The requests to `path` that were answered with `answer`. */
  seen(path: string, answer: SeenRequest['answer']): SeenRequest[] {
    return this.requests.filter((r) => r.path === path && r.answer === answer);
  }

  /** The image the cloud stored under `sourceId`. */
  image(sourceId: string): ReceivedImage | undefined {
    return this.images.find((i) => i.sourceId === sourceId);
  }

  /** Stops the server, dropping hung connections. */
  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private takeFault(path: string): Fault | undefined {
    const active = this.faults.find((f) => f.left > 0 && (f.path === undefined || f.path === path));
    if (!active) return undefined;
    active.left--;
    return active.fault;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = req.url ?? '';
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}, eventIds?: string[]) => {
      this.requests.push({ path, answer: status, at: Date.now(), eventIds });
      req.resume(); // an answer before the body is read: drain it so the client can finish sending
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || (path !== UPLOAD_PATH && path !== BATCH_PATH)) return reply(404, { error: 'Not Found' });
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) return reply(401, { error: 'Unauthorized' });
    const fault = this.takeFault(path);
    if (fault === 'hang' || fault === 'close') {
      this.requests.push({ path, answer: fault, at: Date.now() });
      if (fault === 'close') req.socket.destroy();
      return;
    }
    if (fault) return reply(fault.status, { error: 'injected failure' }, fault.headers);
    if (path === UPLOAD_PATH) this.receiveImage(req, reply);
    else this.receiveBatch(req, reply);
  }

  private receiveImage(req: http.IncomingMessage, reply: (status: number, body: unknown) => void): void {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers });
    } catch {
      return reply(400, { error: 'not multipart/form-data' });
    }
    let name: string | undefined;
    const files: Omit<ReceivedImage, 'sourceId' | 'name'>[] = [];
    parser.on('field', (field, value) => {
      if (field === 'name') name = value;
    });
    parser.on('file', (field, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (field === 'file') files.push({ filename: info.filename ?? '', contentType: info.mimeType, bytes: Buffer.concat(chunks) });
      });
    });
    parser.on('error', () => reply(400, { error: 'malformed multipart body' }));
    parser.on('close', () => {
      if (files.length !== 1 || files[0].bytes.length === 0) return reply(400, { error: 'exactly one non-empty file part is required' });
      const sourceId = `ve-img-${this.images.length + 1}`;
      this.images.push({ sourceId, name, ...files[0] });
      reply(201, { success: true, sourceId, url: `${this.url}/images/${sourceId}` });
    });
    req.pipe(parser);
  }

  private receiveBatch(req: http.IncomingMessage, reply: (status: number, body: unknown, headers?: Record<string, string>, eventIds?: string[]) => void): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let events: Record<string, any>[];
      try {
        events = JSON.parse(Buffer.concat(chunks).toString('utf8')).events;
      } catch {
        return reply(400, { error: 'malformed JSON' });
      }
      if (!Array.isArray(events) || events.length === 0 || events.length > 100) return reply(400, { error: 'events: 1 to 100 required' });
      const eventIds = events.map((e) => String(e.eventId));
      const refused = eventIds.find((id) => this.refusedEvents.has(id));
      if (refused !== undefined) return reply(this.refusedEvents.get(refused)!, { error: `event ${refused} is invalid` }, {}, eventIds);
      for (const event of events) {
        if (!this.events.has(event.eventId)) this.order.push(event.eventId);
        this.events.set(event.eventId, event);
        this.deliveries.set(event.eventId, (this.deliveries.get(event.eventId) ?? 0) + 1);
      }
      reply(201, { created: events.length, eventIds }, {}, eventIds);
    });
  }
}
