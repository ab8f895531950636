/** Waiting in tests: a free port for a server the test starts, and polling until a condition holds. */
export { freePort } from '../../scripts/lib/free-port.js';

type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Polls `condition` every `everyMs` until it answers a truthy value, and answers that value (so
 * a condition may answer what it read, e.g. `ids.length === 2 && ids`, for the test to assert on).
 * @param timeoutMs how long to wait (ms)
 * @throws Error naming `what` after `timeoutMs`
 */
export async function until<T>(what: string, condition: () => T | Promise<T>, timeoutMs = 30_000, everyMs = 50): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
