/** Counting answers by status (and failures without one), for the harnesses' reports. */

/** A histogram of outcomes: HTTP statuses, `network error`, `timeout`. */
export class StatusTally {
  readonly counts = new Map<string, number>();

  /** Counts one outcome. */
  add(outcome: number | string): void {
    const key = String(outcome);
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  /** How many outcomes were counted under `outcome`. */
  get(outcome: number | string): number {
    return this.counts.get(String(outcome)) ?? 0;
  }

  /** Outcomes that are neither a 2xx, nor 4xx, nor 507/529: 500s, network errors, timeouts. */
  failures(): number {
    let n = 0;
    for (const [key, count] of this.counts) if (!/^(2..|4..|507|529)$/.test(key)) n += count;
    return n;
  }

  /** e.g. `201 x 310, 507 x 40`. */
  toString(): string {
    return [...this.counts].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k} x ${n}`).join(', ') || 'none';
  }
}

/** The outcome of a request failure without an HTTP answer, e.g. `timeout`, `network error (ECONNRESET)`. */
export function failureOutcome(err: unknown): string {
  const { name, cause } = err as Error & { cause?: { code?: string; message?: string } };
  if (name === 'TimeoutError' || name === 'AbortError') return 'timeout';
  return `network error (${cause?.code ?? cause?.message ?? (err as Error).message})`;
}
