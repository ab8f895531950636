/**
 * The durable floor: the least a server must do to take an event durably. POST /v2/events reads
 * the body, JSON.parses it, appends it to a file zeroed ahead of time and fdatasyncs before the
 * 201; no validation, no index, no image decoding. Its one definition is the store's own
 * (src/bench/durable-floor.ts, which `edge-events bench` runs beside the store on a box), loaded
 * from the build (../dist) as no-storage.js loads the store's create path. The store's rate, CPU
 * and bytes per event against this one are what its index, its checks and its record cost.
 *
 *   PORT=18001 DATA_DIR=/tmp/floor HTTP_ENGINE=uws node ceilings/durable-floor.js
 *   PORT=18001 DATA_DIR=/tmp/floor HTTP_ENGINE=node node ceilings/durable-floor.js
 *
 * Settings come from the environment as the store reads them (loadConfig: HOST, PORT, DATA_DIR,
 * HTTP_ENGINE, MAX_RECORD_SIZE_BYTES, LOG_LEVEL); it writes DATA_DIR/floor.log (16 MiB, overwritten
 * in a ring). GET /health answers 200 once listening, GET /events/count/stats the events it made
 * durable; SIGTERM stops it.
 */
import { runDurableFloor } from '../../dist/src/bench/durable-floor.js';

try {
  await runDurableFloor(process.env);
} catch (err) {
  console.error(`durable-floor: ${err.message}`);
  process.exit(1);
}
