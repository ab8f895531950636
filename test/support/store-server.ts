/**
 * Starts the real store for a test: on port 0, a real LMDB in a fresh temp dir, on the HTTP
 * engine HTTP_ENGINE names (`uws` or `node`; unset: the best that loads, as in production).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { startService, type StoreService } from '../../src/serve.js';

export interface TestStore {
  url: string;
  dataDir: string;
  /** The running service (its lifecycle worker, for the restart test). */
  service: StoreService;
  /** Stops the server and closes the store (the data dir stays, for reopen tests). */
  stop(): Promise<void>;
}

/** Data directories of this test process, removed when it exits (each test file is one process). */
const createdDirs: string[] = [];

function removeCreatedDirs(): void {
  for (const dir of createdDirs) fs.rmSync(dir, { recursive: true, force: true });
}

/** A new empty data directory under the OS temp dir, removed when the test process exits. */
export function tempDataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-test-'));
  if (createdDirs.length === 0) process.once('exit', removeCreatedDirs);
  createdDirs.push(dir);
  return dir;
}

/** The HTTP engine the tests of this process run on (HTTP_ENGINE; unset: the best that loads). */
export const testEngine = process.env.HTTP_ENGINE;

/**
 * Starts a store with `env` on top of test defaults (127.0.0.1, port 0, logs silent, the
 * process's HTTP_ENGINE).
 * @param env settings as environment strings, e.g. `{ API_KEY: 'k' }`
 */
export async function startStore(env: Record<string, string> = {}): Promise<TestStore> {
  const dataDir = env.DATA_DIR ?? tempDataDir();
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', DATA_DIR: dataDir, HTTP_ENGINE: testEngine, ...env });
  const service = await startService(config);
  return {
    url: `http://127.0.0.1:${service.port}`,
    dataDir,
    service,
    stop: () => service.stop(1000),
  };
}
