/**
 * Preloaded into a server under test (`node --import <this file> ...`): how long the HTTP thread
 * stalled. A `monitorEventLoopDelay` histogram sampled every millisecond, and every garbage
 * collection's pause (a `gc` PerformanceObserver, Node's perf_hooks reference). SIGUSR2 starts
 * both afresh (the harness sends it once its warm-up is done); at exit the process prints one line,
 * `LOOP_DELAY {json}`: the delay's p50, p99 and max, and the GC pauses' count, total and longest
 * (ms).
 */
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
let gc = { count: 0, totalMs: 0, maxMs: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gc.count++;
    gc.totalMs += entry.duration;
    gc.maxMs = Math.max(gc.maxMs, entry.duration);
  }
}).observe({ entryTypes: ['gc'] });

process.on('SIGUSR2', () => {
  delay.reset();
  gc = { count: 0, totalMs: 0, maxMs: 0 };
});

process.on('exit', () => {
  const ms = (ns) => ns / 1e6;
  console.log(`LOOP_DELAY ${JSON.stringify({ p50Ms: ms(delay.percentile(50)), p99Ms: ms(delay.percentile(99)), maxMs: ms(delay.max), gc })}`);
});
