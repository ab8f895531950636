/**
 * One power cut of a store whose DATA_DIR is on a loop-mounted image (loop-image.ts): the store
 * is frozen (SIGSTOP, and every thread of it seen stopped), the ledger copied as it stands, the
 * image file copied (`cp --sparse=always`), and the store resumed (SIGCONT).
 *
 * The copy holds what the file system had written to its device, not what sits in its page
 * cache: a power cut at the moment of the freeze (docs/RELIABILITY.md, "Power loss"). The store
 * does nothing while frozen, but the kernel's writeback and journal commits go on; a write that
 * lands on the device while the file is being read would leave a copy of no single moment, so
 * the device's write counters (block-stats.ts) are read before and after each copy and a copy
 * they do not show quiet is taken again.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { quietBetween, readBlockWrites, sectorsBetween } from './block-stats.js';
import type { Ledger } from './crash-ledger.js';
import type { MountedImage } from './loop-image.js';
import { threadStates } from './proc-stats.js';
import type { StoreProcess } from './store-process.js';

const execFileAsync = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Copies taken at the most per cut before the last one is kept though not quiet. */
const MAX_COPIES = 5;
const STOP_DEADLINE_MS = 10_000;

/** A cut: the copy of the device, and what the store had acknowledged at the freeze. */
export interface Cut {
  /** The ledger at the freeze: its acknowledged writes must be in the copy, its refused ones not. */
  expected: Ledger;
  copy: string;
  /** Bytes the copy holds on disk (its blocks: it is sparse). */
  copyBytes: number;
  /** Time the last copy took (ms). */
  copyMs: number;
  /** Copies taken (1 when the first was quiet). */
  copies: number;
  /** True when the kept copy was quiet: no write reached the device while it was read. */
  quiet: boolean;
  /** Sectors that reached the device while copies were read (0 when the first was quiet). */
  sectorsDuringCopies: number;
  /** SIGSTOP to SIGCONT (ms). */
  frozenMs: number;
}

/** Waits until every thread of `pid` is stopped (`T`), i.e. no syscall of the store is still running. */
async function allStopped(pid: number): Promise<void> {
  const deadline = performance.now() + STOP_DEADLINE_MS;
  for (;;) {
    const states = threadStates(pid);
    if (states.length === 0) throw new Error(`process ${pid} ended while being frozen`);
    if (states.every((state) => state === 'T' || state === 't')) return;
    if (performance.now() > deadline) throw new Error(`process ${pid} not stopped ${STOP_DEADLINE_MS} ms after SIGSTOP: thread states ${states.join('')}`);
    await sleep(1);
  }
}

/**
 * Cuts the power of `store`, whose DATA_DIR is on `live`, into `copy`. The ledger is copied in the
 * same tick as the SIGSTOP is sent: an answer read later is not in `expected`.
 */
export async function cutPower(store: StoreProcess, live: MountedImage, ledger: Ledger, copy: string): Promise<Cut> {
  const frozen = performance.now();
  store.signal('SIGSTOP');
  const expected = ledger.snapshot();
  try {
    await allStopped(store.pid);
    let copies = 0;
    let sectorsDuringCopies = 0;
    for (;;) {
      copies++;
      const before = readBlockWrites(live.device);
      const started = performance.now();
      await execFileAsync('cp', ['--sparse=always', live.image, copy]);
      const copyMs = performance.now() - started;
      const after = readBlockWrites(live.device);
      const quiet = quietBetween(before, after);
      if (!quiet) sectorsDuringCopies += sectorsBetween(before, after);
      if (quiet || copies === MAX_COPIES) {
        const copyBytes = fs.statSync(copy).blocks * 512;
        return { expected, copy, copyBytes, copyMs, copies, quiet, sectorsDuringCopies, frozenMs: performance.now() - frozen };
      }
    }
  } finally {
    store.signal('SIGCONT');
  }
}
