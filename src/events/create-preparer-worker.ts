/**
 * The create preparer's worker (create-preparer.ts): parses and prepares heavy create bodies,
 * in the order they come, and posts each event back with its images' bytes moved, not copied.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { errorReport, type ErrorReport } from '../errors.js';
import { movableBuffers } from '../worker-start.js';
import { parseJsonText } from '../json-text.js';
import type { NewEvent } from '../store/event-store.js';
import { prepareCreate, type CreateLimits } from './create-event.js';

/** HTTP thread -> worker: a create body's JSON text. */
export interface PrepareMessage {
  id: number;
  text: Uint8Array;
}

/** Worker -> HTTP thread: the prepared event, or why the body was refused. */
export type PreparedMessage = { id: number; event: NewEvent } | { id: number; error: ErrorReport };

const limits = workerData as CreateLimits;
const port = parentPort!;

port.on('message', async ({ id, text }: PrepareMessage) => {
  try {
    const event = await prepareCreate(parseJsonText(Buffer.from(text.buffer, text.byteOffset, text.byteLength)), limits);
    const images = event.images.flatMap(({ image, input }) => [image?.bytes, input?.bytes]).filter((b): b is Buffer => b !== undefined);
    port.postMessage({ id, event } satisfies PreparedMessage, movableBuffers(images));
  } catch (err) {
    port.postMessage({ id, error: errorReport(err) } satisfies PreparedMessage);
  }
});
