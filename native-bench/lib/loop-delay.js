/**
 * Preloaded into a server under test (`node --import <this file> ...`): how long the HTTP thread
 * stalled. A `monitorEventLoopDelay` histogram sampled every millisecond, and every garbage
 * collection's pause (a `gc` PerformanceObserver, Node's perf_hooks reference). SIGUSR2 starts
 * both afresh (the harness sends it once its warm-up is done); at exit the process prints one line,
 * `LOOP_DELAY {json}`: the delay's p50, p99 and max, and the GC pauses' count, total and longest
 * (ms), also by kind (`minor`: scavenges of the young generation; `major`: mark-compacts;
 * `incremental` and `weakcb`: steps of a major one; perf_hooks' `NODE_PERFORMANCE_GC_*` kinds).
 */
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
const KINDS = { [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor', [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb' };
const pauses = () => ({ count: 0, totalMs: 0, maxMs: 0 });
let gc = { ...pauses(), byKind: {} };
/** Counts one pause of `ms` into `tally`. */
function count(tally, ms) {
  tally.count++;
  tally.totalMs += ms;
  tally.maxMs = Math.max(tally.maxMs, ms);
}
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    count(gc, entry.duration);
    const kind = KINDS[entry.detail?.kind] ?? String(entry.detail?.kind);
    count((gc.byKind[kind] ??= pauses()), entry.duration);
  }
}).observe({ entryTypes: ['gc'] });

process.on('SIGUSR2', () => {
  delay.reset();
  gc = { ...pauses(), byKind: {} };
});

process.on('exit', () => {
  const ms = (ns) => ns / 1e6;
  console.log(`LOOP_DELAY ${JSON.stringify({ p50Ms: ms(delay.percentile(50)), p99Ms: ms(delay.percentile(99)), maxMs: ms(delay.max), gc })}`);
});
