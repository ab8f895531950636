/**
 * The index writer thread (index-writer.ts): puts a large checkpoint's creates into LMDB off the
 * HTTP thread. It opens the store's LMDB environment, which lmdb-js shares between the threads of
 * one process, and decodes each create's record from its stored value for its index keys.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { errorReport } from '../errors.js';
import { putCreates } from './create-index.js';
import type { LoggedCreate } from './index-head.js';
import type { FromIndexWriter, ToIndexWriter } from './index-writer-messages.js';
import { openDatabases } from './lmdb-env.js';
import { decodeRecord } from './record-codec.js';

const port = parentPort!;
const dbs = openDatabases((workerData as { dataDir: string }).dataDir);

port.on('message', (message: ToIndexWriter) => {
  if (message.type === 'close') {
    void dbs.root.close().finally(() => port.close());
    return;
  }
  const { id, values, lengths, files } = message;
  // Copied out of the shared buffer, which the HTTP thread reuses once this put is answered: lmdb-js
  // reads a value's bytes on its write thread, and the first of a failed append's two puts
  // (create-index.ts `putCreated`) is answered only after that.
  const bytes = Buffer.from(new Uint8Array(values, 0, lengths.reduce((n, l) => n + l, 0)));
  let offset = 0;
  const answer = (async (): Promise<FromIndexWriter> => {
    try {
      const creates: LoggedCreate[] = lengths.map((length, i) => {
        const value = bytes.subarray(offset, (offset += length));
        return { record: decodeRecord(value), value, files: files[i] };
      });
      await putCreates(dbs, creates);
      return { type: 'put', id };
    } catch (err) {
      return { type: 'failed', id, cause: errorReport(err) };
    }
  })();
  void answer.then((reply) => port.postMessage(reply));
});
