/**
 * The create preparer's worker (create-preparer.ts): parses and prepares heavy create bodies,
 * in the order they come, builds and encodes each record as the store would (store/engine/prepared-create.ts),
 * and posts it back with its encoded bytes and its images' bytes moved, not copied.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { errorReport, type ErrorReport, type ValidationIssue } from '../errors.js';
import { movableBuffers } from '../worker-start.js';
import { parseJsonText } from '../json-text.js';
import { prepareCreateRecord, type PreparedCreate } from '../store/index.js';
import { prepareCreate, type CreateLimits } from './create-event.js';
import { presentEventJson } from './present.js';
import type { IgnoredKey } from './unknown-keys.js';

/** HTTP thread -> worker: a create body's JSON text. */
export interface PrepareMessage {
  id: number;
  text: Uint8Array;
}

/** Worker -> HTTP thread: the prepared create, or why the body was refused. */
export type PreparedMessage = { id: number; prepared: PreparedCreate; ignored: IgnoredKey[]; warnings: ValidationIssue[] } | { id: number; error: ErrorReport };

const limits = workerData as CreateLimits;
const port = parentPort!;

port.on('message', async ({ id, text }: PrepareMessage) => {
  try {
    const { event, ignored, warnings } = await prepareCreate(parseJsonText(Buffer.from(text.buffer, text.byteOffset, text.byteLength)), limits);
    // The store the HTTP thread opens presents its records with presentEventJson too (serve.ts).
    const prepared = prepareCreateRecord(event, presentEventJson);
    const bytes = prepared.imageBlobs.map((blob) => blob.bytes);
    if ('unstamped' in prepared.encoded) bytes.push(prepared.encoded.unstamped.value);
    port.postMessage({ id, prepared, ignored, warnings } satisfies PreparedMessage, movableBuffers(bytes));
  } catch (err) {
    port.postMessage({ id, error: errorReport(err) } satisfies PreparedMessage);
  }
});
