/**
 * The durable floor (docs/OPERATIONS.md, "Measuring the box: edge-events bench"; native-bench/README.md,
 * "The durable floor"): the least a server must do to take an event durably. POST /v2/events reads
 * the body (the store's reader, src/http/json-body.ts, within MAX_RECORD_SIZE_BYTES), parses it
 * (src/json-text.ts), appends it to a file zeroed ahead of time and `fdatasync`s the file before it
 * answers 201 `{"id"}`: no validation, no index, no image decoding. GET /health answers 200, and
 * GET /events/count/stats `{"total_count"}` the events made durable since it started, as the store
 * and native-bench's peers answer it, so a bench checks that every 201 was kept. What the store spends above it
 * is what its index, its checks and its record cost; what the floor spends is the disk's and HTTP's.
 *
 * Engine: the store's own choice (src/http/engine-choice.ts `createEngine`, HTTP_ENGINE as the store
 * reads it), so a ratio to the store compares storage work, not HTTP engines. Appends run on the
 * HTTP thread, one `writev` and one `fdatasync` per batch: the bodies that arrived in one turn of
 * the event loop, so N requests in flight share a sync as the store's group commit shares one
 * (docs/STORAGE.md). The file is FLOOR_FILE_BYTES of zeros written and synced before listening;
 * appends overwrite it and wrap to its start, so a sync commits data blocks and never the file's
 * size. The zeros go one kernel page per write, as the store's log writes its zeros ahead
 * (docs/STORAGE.md, "The segment log"): Linux caches a write in a folio as large as the write and
 * counts each later write into a folio as the whole folio in `write_bytes`, which would make every
 * small append read as megabytes written.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, type Config } from '../config.js';
import type { Exchange } from '../http/exchange.js';
import { createEngine } from '../http/engine-choice.js';
import { readBodyText } from '../http/json-body.js';
import { parseJsonText } from '../json-text.js';
import { createLogger } from '../logger.js';
import { kernelPageBytes } from '../store/index.js';

/** Bytes of the pre-zeroed file appends overwrite, wrapping to its start (16 MiB). */
export const FLOOR_FILE_BYTES = 16 * 1024 * 1024;

/** A running floor. */
export interface DurableFloor {
  /** The port listened on (PORT=0: one the kernel chose). */
  port: number;
  /** The HTTP engine serving: `uws` or `node` (docs/OPERATIONS.md, "HTTP engines"). */
  engine: 'uws' | 'node';
  /** Stops listening and closes the file; requests under way are dropped. */
  stop(): void;
}

/**
 * Starts the floor on `config.host:config.port`, its file `floor.log` in `config.dataDir` (made).
 * @throws the fs error when the file cannot be made; UwsUnavailable (HTTP_ENGINE=uws without a
 *   native build); Error `cannot listen on host:port` from the engine
 */
export async function startDurableFloor(config: Config): Promise<DurableFloor> {
  const log = createLogger(config.logLevel);
  fs.mkdirSync(config.dataDir, { recursive: true });
  const fd = fs.openSync(path.join(config.dataDir, 'floor.log'), 'w');
  const page = Buffer.alloc(kernelPageBytes());
  for (let at = 0; at < FLOOR_FILE_BYTES; at += page.length) fs.writeSync(fd, page, 0, page.length, at);
  fs.fsyncSync(fd);
  let position = 0;
  let appended = 0;
  let batch: { body: Buffer; ex: Exchange }[] = [];
  const flush = () => {
    const bodies = batch.map((entry) => entry.body);
    const answered = batch;
    batch = [];
    const bytes = bodies.reduce((sum, body) => sum + body.length, 0);
    if (position + bytes > FLOOR_FILE_BYTES) position = 0;
    try {
      const written = fs.writevSync(fd, bodies, position);
      // A regular file takes the whole writev but on a full disk, where the rest throws ENOSPC.
      if (written < bytes) fs.writeSync(fd, Buffer.concat(bodies).subarray(written), 0, bytes - written, position + written);
      fs.fdatasyncSync(fd);
      position += bytes;
      appended += answered.length;
      for (const { ex } of answered) ex.json(201, { id: randomUUID() });
    } catch (err) {
      for (const { ex } of answered) ex.fail(err, (failure) => log.error({ err: failure }, 'durable floor: append failed'));
    }
  };
  const engine = createEngine(config, log);
  engine.route('get', '/health', (ex) => ex.json(200, { status: 'healthy', datastore: 'durable floor' }));
  engine.route('get', '/events/count/stats', (ex) => ex.json(200, { total_count: appended }));
  engine.route('post', '/v2/events', (ex) => {
    readBodyText(ex, config.maxRecordSizeBytes).then((body) => {
      parseJsonText(body);
      if (batch.push({ body, ex }) === 1) setImmediate(flush);
    }).catch((err) => ex.fail(err, (failure) => log.error({ err: failure }, 'durable floor: request failed')));
  });
  const port = await engine.listen(config.host, config.port);
  log.info({ port, httpEngine: engine.name, file: path.join(config.dataDir, 'floor.log') }, 'durable floor listening');
  return {
    port,
    engine: engine.name,
    stop() {
      engine.stopListening();
      fs.closeSync(fd);
    },
  };
}

/**
 * The floor as a process of its own (src/bench/floor-main.ts; native-bench/ceilings/durable-floor.js):
 * settings from the environment as the store reads them (src/config.ts `loadConfig`: HOST, PORT,
 * DATA_DIR, HTTP_ENGINE, MAX_RECORD_SIZE_BYTES, LOG_LEVEL); its `durable floor listening` log line
 * on stdout names the port and the engine; SIGTERM or SIGINT stops it with exit code 0.
 * @throws ConfigError naming a bad setting, or what startDurableFloor throws
 */
export async function runDurableFloor(env: Record<string, string | undefined> = process.env): Promise<void> {
  const floor = await startDurableFloor(loadConfig(env));
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      floor.stop();
      process.exit(0);
    });
  }
}
