/**
 * The durable floor's process (src/bench/durable-floor.ts `runDurableFloor`), which `edge-events
 * bench` starts beside the store so that its CPU and bytes written are its own (/proc/<pid>).
 */
import { runDurableFloor } from './durable-floor.js';

await runDurableFloor();
