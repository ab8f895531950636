/**
 * How far behind its fleet's stream a hub is (docs/OPERATIONS.md, "Hub mode", "Lag in sight"): the
 * messages its durable consumer has not had acknowledged, and the lag in seconds, for `/stats`
 * `hub` and `/metrics`; a lag that keeps growing is logged.
 *
 * The consumer's info (@nats-io/jetstream `Consumer.info()`: `num_pending`, `num_ack_pending`)
 * is read in the background, at most once every LAG_REFRESH_MS; readers get the last value and
 * never wait for NATS.
 *
 * The lag is measured against the JetStream timestamp of the messages (when the stream stored
 * them), not the device's created_at: an import does not keep the device's created_at (the stored
 * event's is the hub's, event-import.ts), and a device's clock is the device's to get wrong.
 */
import type { ConsumerInfo } from '@nats-io/jetstream';
import type { Logger } from '../logger.js';
import { formatMicrosOrNull } from '../store/index.js';

/** How often the consumer's info is read, at most (ms); a read under way is never doubled. */
const LAG_REFRESH_MS = 1000;

/**
 * The parts the warning window is cut into (LagWatch): its length must give each part a read of
 * the consumer's info (NATS_SOURCE_LAG_WARN_SECONDS is at least this many LAG_REFRESH_MS).
 */
const LAG_WINDOW_PARTS = 4;

/**
 * Growth of the lag's low over the warning window below which it is not called growing (s): the
 * lag's own grain, as the consumer's info, which says when the hub had caught up, is read once a
 * second.
 */
const GROWTH_FLOOR_SECONDS = 1;

/** `/stats` `hub`'s lag fields (docs/API.md, "Statistics"). */
export interface HubLagStatus {
  /** `num_pending` plus `num_ack_pending` at the last read of the consumer's info; null before the first. */
  pending_messages: number | null;
  /** Seconds the hub is behind the stream (HubLag.lagSeconds); null while unknown. */
  lag_seconds: number | null;
  /** The JetStream timestamp of the newest message imported since the start; null before one. */
  newest_imported_at: string | null;
}

/** Reads the hub consumer's info; undefined while there is no consumer yet (not connected). */
export type ConsumerInfoReader = () => Promise<ConsumerInfo | undefined>;

export class HubLag {
  private pending: number | null = null;
  /** The JetStream timestamp of the newest message imported since the start (µs since the epoch). */
  private newestImported: number | null = null;
  /**
   * When a read of the consumer's info, asked at this moment, answered that nothing was pending
   * (µs since the epoch, this host's clock): every message the stream held by then was handled.
   */
  private caughtUpAt: number | null = null;
  /** The last read of the consumer's info answered, and nothing was pending (a failed read clears it). */
  private caughtUp = false;
  private reading = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly watch: LagWatch;

  /**
   * @param readInfo the consumer's info, read in the background
   * @param warnSeconds NATS_SOURCE_LAG_WARN_SECONDS: how long the lag must grow before it is logged (s)
   */
  constructor(private readonly readInfo: ConsumerInfoReader, warnSeconds: number, private readonly log: Logger) {
    this.watch = new LagWatch(warnSeconds * 1000, log);
  }

  /** Starts reading the consumer's info every LAG_REFRESH_MS. */
  start(): void {
    this.timer ??= setInterval(() => void this.refresh(), LAG_REFRESH_MS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * A message was acknowledged after its event was stored here (by this delivery or an earlier one).
   * @param timestampNanos its JetStream timestamp (ns since the epoch; JsMsg.timestampNanos)
   */
  imported(timestampNanos: bigint): void {
    const micros = Number(timestampNanos / 1000n);
    if (this.newestImported === null || micros > this.newestImported) this.newestImported = micros;
  }

  /**
   * Seconds the hub is behind its stream: now minus the newest moment up to which it is known to
   * have handled the stream: the JetStream timestamp of the newest message it imported, or the
   * last moment the consumer's info showed nothing pending, whichever is later (so a quiet fleet
   * does not read as a growing lag, nor its next message as the hours since the one before).
   * 0 while the last read showed nothing pending; never below 0 (the NATS server's clock ahead of
   * this host's); null before either is known (a hub just started on a backlog).
   */
  lagSeconds(): number | null {
    if (this.caughtUp) return 0;
    const handledUntil = Math.max(this.newestImported ?? -Infinity, this.caughtUpAt ?? -Infinity);
    if (handledUntil === -Infinity) return null;
    return Math.max(0, Date.now() * 1000 - handledUntil) / 1e6;
  }

  /** The figures of `/stats` `hub` (docs/API.md, "Statistics"), from the last read; never waits for NATS. */
  status(): HubLagStatus {
    return { pending_messages: this.pending, lag_seconds: this.lagSeconds(), newest_imported_at: formatMicrosOrNull(this.newestImported) };
  }

  /** Reads the consumer's info (unless a read is under way), then gives the lag to the watch. */
  async refresh(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      const asked = Date.now() * 1000;
      const info = await this.readInfo();
      this.caughtUp = info !== undefined && info.num_pending + info.num_ack_pending === 0;
      if (info) this.pending = info.num_pending + info.num_ack_pending;
      if (this.caughtUp) this.caughtUpAt = Math.max(this.caughtUpAt ?? 0, asked);
    } catch (err) {
      // The consume loop logs the connection's troubles; the last figures stay, the lag grows.
      this.caughtUp = false;
      this.log.debug({ err }, 'reading the hub consumer\'s info failed');
    } finally {
      this.reading = false;
    }
    const lag = this.lagSeconds();
    if (lag !== null) this.watch.sample(Date.now(), lag, this.caughtUp, this.pending);
  }
}

/**
 * Logs a lag that has grown for a whole window, once, and its recovery, once (docs/OPERATIONS.md,
 * "Hub mode"). The window is cut into LAG_WINDOW_PARTS equal parts: the lag has grown when its
 * lowest value rose from each part to the next, by more than GROWTH_FLOOR_SECONDS from the first
 * part to the last. Lows, not single samples: a hub that keeps up has a lag that jumps about
 * (a batch, a large video, a caught-up read between two messages), and only one falling behind
 * raises its lows. It has recovered when the hub caught up, or the lag fell back to the first
 * part's low.
 */
class LagWatch {
  /** The samples of the last window (`at` in ms since the epoch, `lag` in s), oldest first. */
  private readonly samples: { at: number; lag: number }[] = [];
  /** While a growth is reported: the low it grew from (s). */
  private grownFrom: number | undefined;

  /** @param windowMs how long the lag must grow (ms) */
  constructor(private readonly windowMs: number, private readonly log: Logger) {}

  /**
   * @param at when (ms since the epoch)
   * @param lag the lag then (s)
   * @param caughtUp the consumer's info just showed nothing pending
   * @param pending the messages pending at its last read, for the log line
   */
  sample(at: number, lag: number, caughtUp: boolean, pending: number | null): void {
    if (this.grownFrom !== undefined && (caughtUp || lag <= this.grownFrom)) {
      this.log.info({ lag_seconds: lag, pending_messages: pending }, 'the hub\'s lag recovered: it caught up, or is back where it was before it grew');
      this.grownFrom = undefined;
    }
    this.samples.push({ at, lag });
    while (this.samples[0]!.at < at - this.windowMs) this.samples.shift();
    if (this.grownFrom !== undefined) return;
    const lows = this.partLows(at);
    if (!lows) return;
    const rose = lows.every((low, i) => i === 0 || low > lows[i - 1]!) && lows.at(-1)! - lows[0]! > GROWTH_FLOOR_SECONDS;
    if (!rose) return;
    this.grownFrom = lows[0];
    this.log.warn({ lag_seconds: lag, pending_messages: pending, grown_seconds: lag - lows[0]!, window_seconds: this.windowMs / 1000 }, 'the hub is falling behind its fleet\'s stream: its lag has grown for NATS_SOURCE_LAG_WARN_SECONDS (docs/OPERATIONS.md, "Hub mode")');
  }

  /** The lowest lag of each part of the window ending `at`; undefined while a part holds no sample. */
  private partLows(at: number): number[] | undefined {
    const partMs = this.windowMs / LAG_WINDOW_PARTS;
    const lows = new Array<number>(LAG_WINDOW_PARTS).fill(Infinity);
    for (const { at: sampled, lag } of this.samples) {
      const part = Math.min(LAG_WINDOW_PARTS - 1, Math.floor((sampled - (at - this.windowMs)) / partMs));
      lows[part] = Math.min(lows[part]!, lag);
    }
    return lows.includes(Infinity) ? undefined : lows;
  }
}
