/**
 * Some uWebSockets.js packages fall back silently to a slow JavaScript server when their native
 * binary does not load (`@trufflesuite/uws-js-unofficial` does, also under UWS_USE_FALLBACK).
 * The loader never counts such a module as a native build: where no native build loads, the
 * store runs on its own `node:http` engine and says so (docs/OPERATIONS.md, "HTTP engines").
 */

/** Thrown when a uWebSockets.js module is not the native one. */
export class NativeServerUnavailable extends Error {
  constructor() {
    super(
      'uWebSockets.js native binary did not load (JavaScript fallback in use, or UWS_USE_FALLBACK set); ' +
        `platform ${process.platform}-${process.arch}, Node ABI ${process.versions.modules}.`,
    );
    this.name = 'NativeServerUnavailable';
  }
}

/**
 * Checks that `uws.App` is the native function, not a JavaScript fallback's.
 * @throws NativeServerUnavailable
 */
export function assertNativeServer(uws: { App: unknown }): void {
  const source = typeof uws.App === 'function' ? Function.prototype.toString.call(uws.App) : '';
  if (!source.includes('[native code]')) throw new NativeServerUnavailable();
}
