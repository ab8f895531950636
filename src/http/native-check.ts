/**
 * The uWebSockets.js package in use (an unofficial build for glibc < 2.38) silently falls back
 * to a slow JavaScript server when its native binary does not load. The store refuses to run
 * on the fallback rather than run slow.
 */

/** Thrown when uWebSockets.js is not running natively. */
export class NativeServerUnavailable extends Error {
  constructor() {
    super(
      'uWebSockets.js native binary did not load (JavaScript fallback in use, or UWS_USE_FALLBACK set); ' +
        `refusing to start. Platform ${process.platform}-${process.arch}, Node ABI ${process.versions.modules}.`,
    );
    this.name = 'NativeServerUnavailable';
  }
}

/**
 * Checks that `uws.App` is the native function, not the fallback's JavaScript one.
 * @throws NativeServerUnavailable
 */
export function assertNativeServer(uws: { App: unknown }): void {
  const source = typeof uws.App === 'function' ? Function.prototype.toString.call(uws.App) : '';
  if (!source.includes('[native code]')) throw new NativeServerUnavailable();
}
