/**
 * Hub mode's metrics (docs/OPERATIONS.md, "Metrics", "Hub mode"), part of the store's `/metrics`
 * (metrics.ts): the consumer's counts since the start, and what waits and the lag, as the hub last
 * read them in the background (src/hub/hub-lag.ts).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { NatsSource } from '../hub/nats-source.js';

/**
 * A gauge that follows `read()`, left out of the exposition while it answers null (unknown: no
 * sample rather than a 0 that would read as a value).
 */
function optionalGauge(name: string, help: string, read: () => number | null, registers: Registry[]): void {
  let value: number | null = null;
  const gauge = new Gauge({ name, help, registers, collect() { value = read(); this.set(value ?? 0); } });
  const get = gauge.get.bind(gauge);
  gauge.get = async () => {
    const metric = await get();
    return value === null ? { ...metric, values: [] } : metric;
  };
}

/**
 * Hub mode's consumer (docs/OPERATIONS.md, "Hub mode"): fleet events imported, messages
 * terminated, id collisions; what waits and the lag, as last read in the background (a scrape
 * never waits for NATS; src/hub/hub-lag.ts).
 * @param prefix every name's (`edge_events_`)
 */
export function hubMetrics(hub: NatsSource, registers: Registry[], prefix: string): void {
  /** A counter that follows `read()`, a count kept elsewhere since the start. */
  const following = (name: string, help: string, read: () => number) => {
    let seen = 0;
    new Counter({ name: `${prefix}${name}`, help, registers, collect() { const now = read(); if (now > seen) this.inc(now - seen); seen = now; } });
  };
  following('hub_imported_events_total', 'Hub mode: events stored from the fleet stream.', () => hub.consumed);
  following('hub_terminated_messages_total', 'Hub mode: fleet messages terminated for good (not a JSON object, or an event this store refuses).', () => hub.terminated);
  following('hub_id_collisions_total', 'Hub mode: fleet events refused because an id they name is stored here for another event or device (counted in terminated too).', () => hub.collisions);
  optionalGauge(`${prefix}hub_pending_messages`, 'Hub mode: fleet messages the hub has not had acknowledged: its consumer\'s num_pending (not yet delivered) plus num_ack_pending (delivered, not acknowledged), from the consumer\'s info read at most once a second; absent before the first read.', () => hub.lag.status().pending_messages, registers);
  optionalGauge(`${prefix}hub_lag_seconds`, 'Hub mode: seconds the hub is behind its fleet\'s stream: now minus the JetStream timestamp of the newest message it imported (when the stream stored it; the device\'s created_at is not kept by an import), or minus the last moment its consumer had nothing pending, whichever is later; 0 when caught up; absent while unknown.', () => hub.lag.lagSeconds(), registers);
}
