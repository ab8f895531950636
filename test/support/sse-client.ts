/**
 * A Server-Sent Events client for tests over fetch: parses `id:`, `event:` and `data:` lines
 * into messages (HTML Living Standard, "Server-sent events", 9.2.6) and skips comments, so a
 * test reads the store's stream message by message.
 */
export interface SseMessage {
  /** The `id:` field; undefined when the message had none. */
  id: string | undefined;
  event: string;
  data: string;
}

export class SseClient {
  private buffer = '';
  private readonly decoder = new TextDecoder();
  private readonly ready: SseMessage[] = [];

  private constructor(
    private readonly reader: ReadableStreamDefaultReader<Uint8Array>,
    private readonly controller: AbortController,
    readonly status: number,
    readonly contentType: string,
  ) {}

  /** Opens `url`; the response's status and type are kept, whatever they are. */
  static async connect(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
    const controller = new AbortController();
    const res = await fetch(url, { headers, signal: controller.signal });
    return new SseClient(res.body!.getReader(), controller, res.status, res.headers.get('content-type') ?? '');
  }

  /**
   * The next message, waiting up to `timeoutMs` (ms).
   * @throws Error when the stream ends or nothing comes in time
   */
  async next(timeoutMs = 15_000): Promise<SseMessage> {
    const deadline = Date.now() + timeoutMs;
    while (this.ready.length === 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no SSE message in time');
      let timer: NodeJS.Timeout | undefined;
      const chunk = await Promise.race([
        this.reader.read(),
        new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('no SSE message in time')), left); }),
      ]).finally(() => clearTimeout(timer));
      if (chunk.done) throw new Error('the stream ended');
      this.buffer += this.decoder.decode(chunk.value, { stream: true });
      this.parse();
    }
    return this.ready.shift()!;
  }

  /** Closes the connection (a client going away). */
  close(): void {
    this.controller.abort();
  }

  private parse(): void {
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const message: SseMessage = { id: undefined, event: 'message', data: '' };
      let fields = 0;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const name = line.slice(0, colon);
        const value = line.slice(colon + 1).replace(/^ /, '');
        if (name === 'id') message.id = value;
        else if (name === 'event') message.event = value;
        else if (name === 'data') message.data += value;
        else continue;
        fields++;
      }
      if (fields > 0) this.ready.push(message);
    }
  }
}
