/**
 * Events per second, counted in the browser: the `created` messages of the live stream that
 * arrived in the last `windowMs` (a sliding window), divided by the window's length, or by the
 * time since counting began while that is shorter. It counts what the stream sends, so it is the
 * rate of the events matching the page's filters; arrival time is the browser's clock, so a
 * device clock that is off does not skew it. (/stats' `total_events` is no rate: cleanup lowers it.)
 */
export class EventRate {
  private readonly arrivals: number[] = [];
  private since: number;

  /**
   * @param windowMs length of the window (ms)
   * @param now the clock (ms), for tests
   */
  constructor(private readonly windowMs = 10_000, private readonly now: () => number = () => performance.now()) {
    this.since = now();
  }

  /** Counts one event, now. */
  add(): void {
    this.arrivals.push(this.now());
  }

  /** Starts counting afresh (new filters). */
  reset(): void {
    this.arrivals.length = 0;
    this.since = this.now();
  }

  /** Events per second over the window. */
  perSecond(): number {
    const now = this.now();
    while (this.arrivals.length > 0 && this.arrivals[0] <= now - this.windowMs) this.arrivals.shift();
    const spanMs = Math.min(this.windowMs, Math.max(1000, now - this.since));
    return (this.arrivals.length * 1000) / spanMs;
  }
}
