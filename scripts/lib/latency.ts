/** Latency samples per request kind over one reporting interval, and their percentiles. */

/** The `p`-th percentile (0..100) of `values` (nearest rank); NaN when empty. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Samples (ms) by kind, emptied at each report. */
export class LatencyWindow {
  private samples = new Map<string, number[]>();

  /** Records one request of `kind` that took `ms`. */
  add(kind: string, ms: number): void {
    const list = this.samples.get(kind);
    if (list) list.push(ms);
    else this.samples.set(kind, [ms]);
  }

  /** The samples of `kind` (every kind when omitted). */
  values(kind?: string): number[] {
    return kind === undefined ? [...this.samples.values()].flat() : this.samples.get(kind) ?? [];
  }

  /** Starts a new interval. */
  reset(): void {
    this.samples = new Map();
  }
}
