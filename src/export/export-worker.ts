/**
 * The dataset export's worker (docs/ARCHITECTURE.md, "Threads"; docs/API.md, "Dataset export"):
 * one per export, started by dataset-export.ts `writeExport`. It reads the store through a
 * view of its own (store-view.ts `openStoreView`, no head: the HTTP thread checkpoints first),
 * finds the matching events, reads and parses each one, converts its predictions and writes the
 * zip (dataset-writer.ts `writeDataset`), all off the HTTP thread: an event of 260,000 detections
 * takes about 0.2 s to parse and as much to convert, which held every other request as long.
 * The zip's bytes go back in chunks, each moved, not copied, and acknowledged by the HTTP thread
 * once its response took it: at most EXPORT_BYTES_IN_FLIGHT are unacknowledged at a time.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { errorReport, type ErrorReport } from '../errors.js';
import { matchingEvents } from '../events/matching-events.js';
import { presentEventJson } from '../events/present.js';
import type { ListLimits } from '../events/read-events.js';
import { openStoreView, type SearchCondition, type StoreView } from '../store/index.js';
import type { ByteSink } from './dataset-zip.js';
import { writeDataset } from './dataset-writer.js';
import { exportEventOf } from './export-event.js';
import type { ExportEvent, ExportFormat, ExportSummary } from './export-types.js';

/** What the worker is started with. */
export interface ExportJob {
  dataDir: string;
  condition: SearchCondition;
  format: ExportFormat;
  limits: ListLimits;
  /** The store's search index covers every event (EventStore.searchIndexReady). */
  searchIndexReady: boolean;
}

/** Worker -> HTTP thread. */
export type ExportWorkerMessage =
  | { type: 'chunk'; bytes: Uint8Array }
  | { type: 'end' }
  | { type: 'done'; summary: ExportSummary }
  | { type: 'failed'; error: ErrorReport };

/** HTTP thread -> worker: `bytes` of zip taken by the response, or the client gone. */
export type ExportHostMessage = { type: 'taken'; bytes: number } | { type: 'aborted' };

/** Bytes of zip posted and not yet taken by the response before the zip waits (bytes). */
export const EXPORT_BYTES_IN_FLIGHT = 1024 * 1024;

/** The HTTP thread's response as the zip's sink: chunks posted, acknowledged as it takes them. */
class PortSink implements ByteSink {
  aborted = false;
  private inFlight = 0;
  private wake: (() => void) | undefined;

  constructor(private readonly port: NonNullable<typeof parentPort>) {
    port.on('message', (message: ExportHostMessage) => {
      if (message.type === 'aborted') this.aborted = true;
      else this.inFlight -= message.bytes;
      if (this.aborted || this.inFlight < EXPORT_BYTES_IN_FLIGHT) this.wake?.();
    });
  }

  write(chunk: Buffer): boolean {
    // A copy the worker owns whole, moved to the HTTP thread: zip-stream may still hold `chunk`.
    const bytes = new Uint8Array(chunk);
    this.inFlight += bytes.length;
    this.port.postMessage({ type: 'chunk', bytes } satisfies ExportWorkerMessage, [bytes.buffer]);
    return this.inFlight < EXPORT_BYTES_IN_FLIGHT;
  }

  writable(): Promise<void> {
    if (this.aborted || this.inFlight < EXPORT_BYTES_IN_FLIGHT) return Promise.resolve();
    return new Promise((resolve) => (this.wake = () => {
      this.wake = undefined;
      resolve();
    }));
  }

  end(): void {
    this.port.postMessage({ type: 'end' } satisfies ExportWorkerMessage);
  }
}

async function* exportEvents(store: StoreView, job: ExportJob): AsyncGenerator<ExportEvent> {
  for await (const event of matchingEvents(store, job.condition, job.limits, job.searchIndexReady)) {
    yield exportEventOf(event, (fileId) => store.openFile(fileId)?.contentType);
  }
}

/**
 * Reads the bytes of stored image `fileId` whole (images are at most MAX_RECORD_SIZE_BYTES; a file
 * compaction moved meanwhile is found at its new place: StoredFile.read).
 * @returns null when the file is gone (storage cleanup deleted it meanwhile) or is no image
 * @throws the fs error of a failed read other than a deleted file
 */
async function readImage(store: StoreView, fileId: string): Promise<Buffer | null> {
  const file = store.openFile(fileId);
  if (!file || file.kind !== 'image') return null;
  try {
    return await file.readAll();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || !store.openFile(fileId)) return null;
    throw err;
  }
}

async function run(job: ExportJob, port: NonNullable<typeof parentPort>): Promise<void> {
  // The HTTP thread's store presents its records with presentEventJson too (serve.ts).
  let outcome: ExportWorkerMessage;
  try {
    const store = openStoreView(job.dataDir, { sinks: [], present: presentEventJson });
    try {
      const summary = await writeDataset(job.format, exportEvents(store, job), (fileId) => readImage(store, fileId), new PortSink(port));
      outcome = { type: 'done', summary };
    } finally {
      await store.close();
    }
  } catch (err) {
    outcome = { type: 'failed', error: errorReport(err) };
  }
  // The HTTP thread ends the worker once it has the outcome.
  port.postMessage(outcome);
}

void run(workerData as ExportJob, parentPort!);
