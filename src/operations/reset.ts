/**
 * Two-step reset (docs/API.md, "Cleanup and reset"): `POST /reset/request`
 * issues a single-use token valid 60 seconds; `POST /reset/confirm` with it deletes every event
 * and file and zeroes the counters. The worker is stopped meanwhile and creates wait, so nothing
 * races the reset.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors.js';
import type { EventStore } from '../store/index.js';
import type { LifecycleWorkerHandle } from '../lifecycle/worker-handle.js';

/** Lifetime of a reset token (seconds). */
export const RESET_TOKEN_SECONDS = 60;
/** Random bytes of a reset token: 192 bits, beyond guessing within its lifetime. */
const RESET_TOKEN_BYTES = 24;

/** Issued tokens, each single-use and short-lived. */
export class ResetTokens {
  private readonly issued = new Map<string, number>();

  /** @param clock the time in ms (injectable for tests) */
  constructor(private readonly clock: () => number = Date.now) {}

  /** Issues a token. */
  issue(): { reset_token: string; expires_in_seconds: number; message: string } {
    this.forgetExpired();
    const token = randomBytes(RESET_TOKEN_BYTES).toString('base64url');
    this.issued.set(token, this.clock() + RESET_TOKEN_SECONDS * 1000);
    return {
      reset_token: token,
      expires_in_seconds: RESET_TOKEN_SECONDS,
      message: `Confirm with POST /reset/confirm within ${RESET_TOKEN_SECONDS} seconds; the reset deletes every event and file`,
    };
  }

  /**
   * Consumes a token (compared in constant time).
   * @throws AppError reset_token_invalid (400) for a missing, unknown, used or expired token
   */
  consume(token: unknown): void {
    this.forgetExpired();
    if (typeof token === 'string' && token.length > 0) {
      const presented = Buffer.from(token);
      for (const [issued] of this.issued) {
        const expected = Buffer.from(issued);
        if (expected.length === presented.length && timingSafeEqual(expected, presented)) {
          this.issued.delete(issued);
          return;
        }
      }
    }
    throw new AppError('reset_token_invalid');
  }

  private forgetExpired(): void {
    const now = this.clock();
    for (const [token, expiresAt] of this.issued) if (expiresAt <= now) this.issued.delete(token);
  }
}

/**
 * Deletes everything: stops the lifecycle worker, clears the store, starts the worker again.
 * @throws the store's error when clearing fails (the worker is restarted all the same)
 */
export async function resetStore(store: EventStore, lifecycle: LifecycleWorkerHandle): Promise<{ status: string; message: string }> {
  await lifecycle.stop();
  try {
    await store.clearAll();
  } finally {
    await lifecycle.restart();
  }
  return { status: 'reset', message: 'Every event and file was deleted' };
}
