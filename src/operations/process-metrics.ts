/**
 * prom-client's default process metrics as /metrics serves them (docs/OPERATIONS.md, "Metrics"):
 * CPU, memory, handles, GC and the event loop's delay, sampled once a second and reported beyond
 * that second; without the gauges promtool refuses and the one that is no heap.
 */
import { collectDefaultMetrics, type Registry } from 'prom-client';

/** How often the event loop's delay is sampled for `nodejs_eventloop_lag_*` (ms; prom-client `eventLoopMonitoringPrecision`). */
const EVENT_LOOP_SAMPLE_MS = 1000;

/** prom-client's statistics of the event loop's delay (lib/metrics/eventLoopLag.js), by name. */
const loopDelayStatistic = (prefix: string, stat: string): string => `${prefix}nodejs_eventloop_lag_${stat}_seconds`;
/** The statistics that are delays (seconds); `stddev` is a spread. */
const LOOP_DELAYS = ['min', 'max', 'mean', 'p50', 'p90', 'p99'];

/**
 * Makes prom-client's loop-delay statistics true (docs/OPERATIONS.md, "Metrics"):
 * - its `monitorEventLoopDelay` histogram records the time between two of its timer's callbacks,
 *   the sampling interval included (Node's perf_hooks: a timer of `resolution` ms), so an idle loop
 *   read a p50 of 1.000 s. Each delay is reported beyond EVENT_LOOP_SAMPLE_MS: how late the sample
 *   came, 0 on an idle loop, the time a stall held it up (a stall of S seconds shows as S minus
 *   the time left to the next sample, 0 to 1 s less: see the docs). After a reset, Node's
 *   histogram records from its second sample on: the first only marks the time;
 * - prom-client resets the histogram at every scrape, so a scrape before the histogram's next
 *   sample (the first second after start, or two scrapes within EVENT_LOOP_SAMPLE_MS) reports an
 *   empty histogram's state: a min of 9223372036.854776 s, a max of 0 and a NaN mean. Such a
 *   scrape leaves them out: a value is kept only when the histogram had a sample, which its max
 *   (0 when empty) tells.
 */
function trueLoopDelayStatistics(registry: Registry, prefix: string): void {
  const max = registry.getSingleMetric(loopDelayStatistic(prefix, 'max'));
  if (!max) return;
  const maxOf = max.get.bind(max);
  const interval = EVENT_LOOP_SAMPLE_MS / 1000;
  for (const stat of [...LOOP_DELAYS, 'stddev']) {
    const gauge = registry.getSingleMetric(loopDelayStatistic(prefix, stat));
    if (!gauge) continue;
    const get = gauge.get.bind(gauge);
    const beyondInterval = stat !== 'stddev';
    gauge.get = async () => {
      const metric = await get();
      const sampled = (await maxOf()).values.some((sample) => sample.value > 0);
      if (!sampled) return { ...metric, values: [] };
      if (!beyondInterval) return metric;
      return { ...metric, values: metric.values.map((sample) => ({ ...sample, value: Math.max(0, sample.value - interval) })) };
    };
  }
}

/**
 * prom-client's default process metrics (docs/OPERATIONS.md, "Metrics"), every name prefixed
 * `prefix`, but its three gauges named `*_total` and its `process_heap_bytes`, and with the event
 * loop's delay sampled every EVENT_LOOP_SAMPLE_MS and reported beyond it (`trueLoopDelayStatistics`).
 */
export function processMetrics(registry: Registry, prefix: string): void {
  // The event loop delay histogram samples every EVENT_LOOP_SAMPLE_MS: each sample wakes an idle
  // store. prom-client's default of 10 ms cost it 4 ms of CPU a second, 100 ms still 0.85
  // (docs/OPERATIONS.md, "Metrics").
  collectDefaultMetrics({ register: registry, prefix, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  // prom-client names three gauges `*_total`, which `promtool check metrics` flags (exit 3); the
  // same counts stay exposed by type as `nodejs_active_handles`, `_requests` and `_resources`.
  for (const kind of ['handles', 'requests', 'resources']) registry.removeSingleMetric(`${prefix}nodejs_active_${kind}_total`);
  // prom-client's `process_heap_bytes` is the process's VmData (its data segments, every mapping
  // reserved included: 2.4 GB beside an RSS of 152 MB), no heap; `nodejs_heap_size_*` are V8's.
  registry.removeSingleMetric(`${prefix}process_heap_bytes`);
  trueLoopDelayStatistics(registry, prefix);
}
