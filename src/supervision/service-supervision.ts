/**
 * What a running store tells systemd (docs/OPERATIONS.md, "Supervision by systemd"): `READY=1`
 * once the store is open and listening, a `STATUS=` line (engine, events stored, capacity) then
 * and every STATUS_INTERVAL_MS while it changes, `WATCHDOG=1` at half the watchdog timeout from
 * this thread's event loop (the HTTP thread's: a loop that stops turning stops the pings, and
 * systemd restarts the store), and `STOPPING=1` when a graceful stop begins.
 */
import prettyBytes from 'pretty-bytes';
import type { Config } from '../config.js';
import type { RuntimeInfo } from '../http/engine.js';
import type { SystemdNotifier } from './systemd-notify.js';

/** Milliseconds between two checks of the status line (sent only when it changed). */
export const STATUS_INTERVAL_MS = 10_000;

/** What the status line tells of the store. */
export interface SupervisedStore {
  config: Config;
  runtime: RuntimeInfo;
  port: number;
  /** Events stored, bytes taken (live blobs and LMDB pages), and whether the store answers 529. */
  figures(): { events: number; storageBytes: number; capacityBlocked: boolean };
}

const bytes = (n: number): string => prettyBytes(n, { binary: true });
const percent = (used: number, limit: number): string => `${((100 * used) / limit).toFixed(1)}%`;

/**
 * The `STATUS=` text, e.g. `serving on uws (@btc-vision/uwebsockets.js@20.57.0), port 8001;
 * 1,234 events (0.1% of 1,000,000); 12 MiB stored (0.1% of 10 GiB)`.
 */
export function statusLine(store: SupervisedStore): string {
  const { events, storageBytes, capacityBlocked } = store.figures();
  const { maxRecords, maxStorageBytes } = store.config;
  const engine = store.runtime.uws_build ? `uws (${store.runtime.uws_build})` : store.runtime.http_engine;
  return `serving on ${engine}, port ${store.port}; ${events.toLocaleString('en-US')} events (${percent(events, maxRecords)} of ${maxRecords.toLocaleString('en-US')}); `
    + `${bytes(storageBytes)} stored (${percent(storageBytes, maxStorageBytes)} of ${bytes(maxStorageBytes)})`
    + (capacityBlocked ? '; capacity-blocked, answering 529' : '');
}

/** The supervision of a running store. */
export interface Supervision {
  /** Announces a graceful stop (`STOPPING=1`) and ends the pings and status updates. */
  stopping(): void;
  /** Ends the pings and status updates and closes the socket. */
  close(): void;
}

/**
 * Tells systemd the store is ready and keeps it informed until `stopping()`.
 * @param watchdogMs interval of `WATCHDOG=1` (ms, watchdogIntervalMs); undefined: no watchdog
 */
export function superviseStore(store: SupervisedStore, notifier: SystemdNotifier, watchdogMs: number | undefined): Supervision {
  let lastStatus = statusLine(store);
  notifier.notify({ READY: 1, STATUS: lastStatus });
  const timers: NodeJS.Timeout[] = [];
  if (watchdogMs !== undefined) timers.push(setInterval(() => notifier.notify({ WATCHDOG: 1 }), watchdogMs).unref());
  timers.push(setInterval(() => {
    const status = statusLine(store);
    if (status === lastStatus) return;
    lastStatus = status;
    notifier.notify({ STATUS: status });
  }, STATUS_INTERVAL_MS).unref());
  const stopTimers = () => timers.splice(0).forEach((timer) => clearInterval(timer));
  return {
    stopping() {
      stopTimers();
      notifier.notify({ STOPPING: 1, STATUS: 'stopping: finishing requests in flight, closing the store' });
    },
    close() {
      stopTimers();
      notifier.close();
    },
  };
}
