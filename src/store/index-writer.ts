/**
 * The HTTP thread's handle on the index writer thread (docs/STORAGE.md, "The index head"): a
 * checkpoint of many creates issues their LMDB puts there (index-writer-thread.ts), so the HTTP
 * thread answers requests meanwhile. Issuing a create's puts costs the issuing thread about 25 µs
 * (lmdb-js encodes keys and values there), so a checkpoint of 2,000 creates, one every 200 s at a
 * pipeline's 10 events a second, held every answer for about 50 ms. The thread starts with the
 * first checkpoint that needs it, and again after it died.
 */
import { Worker } from 'node:worker_threads';
import { errorFromReport } from '../errors.js';
import type { LoggedCreate } from './index-head.js';
import type { FromIndexWriter, ToIndexWriter } from './index-writer-messages.js';

// Built: dist/src/store/index-writer-thread.js. Tests run the TypeScript sources.
const threadUrl = new URL(import.meta.url.endsWith('.ts') ? './index-writer-thread.ts' : './index-writer-thread.js', import.meta.url);

/**
 * Creates from which a checkpoint's puts go to the index writer thread: fewer are put on the HTTP
 * thread in one turn (at most about 6 ms), which spares a store with a slow pace, and each test's
 * small store, a thread of its own.
 */
export const WRITER_THREAD_MIN_CREATES = 256;

export class IndexWriter {
  private current: Worker | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: () => void; reject: (err: unknown) => void }>();
  /** Where the stored values of a checkpoint's creates travel to the thread (`valuesBuffer`). */
  private values: SharedArrayBuffer | undefined;
  /** Checkpoints whose puts the thread made, since the store opened. */
  threadCheckpoints = 0;

  /** @param dataDir the store's data directory, whose LMDB environment the thread opens */
  constructor(private readonly dataDir: string) {}

  /** The thread running now, if any (tests terminate it to see a checkpoint fail and the next one start another). */
  get thread(): Worker | undefined {
    return this.current;
  }

  /**
   * Puts the records, ids, file locations and index entries of `creates` into LMDB on the index
   * writer thread (create-index.ts `putCreates`), and resolves once they have committed. The
   * records' stored values are copied back to back into `values`, which the thread reads and
   * decodes; one checkpoint at a time.
   * @throws the lmdb error of a failed commit, or an Error when the thread dies meanwhile
   */
  putCreates(creates: readonly LoggedCreate[]): Promise<void> {
    const thread = this.current ?? this.start();
    const values = this.valuesBuffer(creates.reduce((n, c) => n + c.value.length, 0));
    let offset = 0;
    for (const { value } of creates) offset += value.copy(values, offset);
    const id = this.nextId++;
    const message: ToIndexWriter = { type: 'put', id, values: this.values!, lengths: creates.map((c) => c.value.length), files: creates.map((c) => c.files) };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      thread.ref();
      thread.postMessage(message);
    });
  }

  /**
   * A view of `bytes` (bytes) on the shared buffer the stored values travel in. The buffer is kept
   * from one checkpoint to the next and grows to the largest: memory the kernel has just handed
   * out costs a fault per page on first write, about 4 ms for the 1.3 MB of 2,000 small events on
   * the bench's machine, while the copy itself takes 0.25 ms. A checkpoint comes at 16 MiB of
   * records at the latest (index-head.ts `checkpointDue`), which bounds it.
   */
  private valuesBuffer(bytes: number): Buffer {
    if (!this.values || this.values.byteLength < bytes) this.values = new SharedArrayBuffer(Math.max(bytes, 2 * (this.values?.byteLength ?? 0)));
    return Buffer.from(this.values, 0, bytes);
  }

  /** Stops the thread once it has closed its LMDB handles; call with no `putCreates` pending. */
  async close(): Promise<void> {
    const thread = this.current;
    if (!thread) return;
    this.current = undefined;
    const exited = new Promise((resolve) => thread.once('exit', resolve));
    thread.ref();
    thread.postMessage({ type: 'close' } satisfies ToIndexWriter);
    await exited;
  }

  private start(): Worker {
    const thread = new Worker(threadUrl, { workerData: { dataDir: this.dataDir } });
    this.current = thread;
    thread.unref();
    thread.on('message', (message: FromIndexWriter) => this.receive(message));
    thread.on('error', (err) => this.fail(thread, err));
    thread.on('exit', (code) => this.fail(thread, new Error(`the index writer thread exited with ${code}`)));
    return thread;
  }

  private receive(message: FromIndexWriter): void {
    const waiting = this.pending.get(message.id);
    this.pending.delete(message.id);
    if (this.pending.size === 0) this.current?.unref();
    if (message.type === 'put') {
      this.threadCheckpoints++;
      waiting?.resolve();
    } else {
      waiting?.reject(errorFromReport(message.cause));
    }
  }

  /** The thread died (or stopped): what it had pending fails, and the next checkpoint starts another. */
  private fail(thread: Worker, err: Error): void {
    if (this.current === thread) this.current = undefined;
    for (const { reject } of this.pending.values()) reject(err);
    this.pending.clear();
  }
}
