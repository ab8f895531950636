/**
 * A store started on a DATA_DIR left by a crash or a power cut and audited at once
 * (crash-audit.ts): the harnesses' check after each kill or cut, with the time the store took to
 * start listening (its recovery included) and the time the audit took.
 */
import { auditStore, type AuditFindings, type AuditOptions } from './crash-audit.js';
import type { Ledger } from './crash-ledger.js';
import { StoreClient } from './http-client.js';
import type { Random } from './random.js';
import { launchStore, type StoreProcess } from './store-process.js';

/** The store did not start, died during its audit, or an audit request failed: the message says which, with the store's output. */
export class StoreFailed extends Error {}

/** A started, audited store, still running. */
export interface AuditedStart {
  store: StoreProcess;
  client: StoreClient;
  found: AuditFindings;
  /** From spawning the process to its "listening" line (ms). */
  startMs: number;
  auditMs: number;
}

/** How the store is started and audited. */
export interface StartOptions extends AuditOptions {
  /** Passed to launchStore: a command that execs the store in place (e.g. new-boot.ts). */
  prefix?: string[];
}

/**
 * Starts the built store on `dataDir` with `env` and audits it against `ledger`.
 * @throws StoreFailed when the store does not start, dies during the audit, or an audit request
 *   fails (a non-200 list page, a deadline passed); the store is killed first
 */
export async function startAndAudit(dataDir: string, env: Record<string, string>, ledger: Ledger, rng: Random, options: StartOptions = {}): Promise<AuditedStart> {
  const started = performance.now();
  const store = await launchStore({ DATA_DIR: dataDir, ...env }, options.prefix).catch((err: Error) => {
    throw new StoreFailed(`the store did not start on ${dataDir}: ${err.message.slice(-2000)}`);
  });
  const startMs = performance.now() - started;
  const client = new StoreClient(store.url, 60_000);
  const auditStarted = performance.now();
  const found = await auditStore(client, ledger, dataDir, rng, { recordCap: options.recordCap }).catch(async (err: Error) => {
    await store.kill('SIGKILL');
    throw new StoreFailed(`the audit failed: ${err.stack}\nstore output: ${store.output().slice(-2000)}`);
  });
  const auditMs = performance.now() - auditStarted;
  if (store.hasExited()) throw new StoreFailed(`the store died during the audit: ${store.output().slice(-2000)}`);
  return { store, client, found, startMs, auditMs };
}
