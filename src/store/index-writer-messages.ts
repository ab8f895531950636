/** What the HTTP thread and the index writer thread say to each other (index-writer.ts). */
import type { ErrorReport } from '../errors.js';
import type { PlacedFile } from './index-head.js';

export type ToIndexWriter =
  /**
   * Put these creates: their stored values back to back from the start of `values`, `lengths`
   * bytes each, with their placed files. The HTTP thread reuses `values` for the next `put` once
   * this one is answered.
   */
  | { type: 'put'; id: number; values: SharedArrayBuffer; lengths: number[]; files: PlacedFile[][] }
  /** Close LMDB and exit. */
  | { type: 'close' };

export type FromIndexWriter =
  /** The creates of `put` `id` have committed. */
  | { type: 'put'; id: number }
  /** Their commit failed. */
  | { type: 'failed'; id: number; cause: ErrorReport };
