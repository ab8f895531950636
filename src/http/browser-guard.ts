/**
 * What a web page an operator visits must not make the store do (docs/RELIABILITY.md,
 * "Security"): with auth off, a page could otherwise POST events or run a cleanup (cross-site
 * requests), or read the store under a name of its own that resolves to the device (DNS
 * rebinding). Browsers say who they are: they send `Origin` on cross-site requests and
 * `Sec-Fetch-Site` on every request. Producers (Python, curl, other services) send neither and
 * reach the store by any name (`http://event-store:8001`): they are never refused for their Host.
 *
 * Rules: a browser request whose Host is not an allowed name answers 421; so does any request for
 * the operator page and its files under such a name, whoever asks (see `GuardedRoute.forBrowsers`);
 * a request that changes
 * state with an Origin other than the store's own (and not listed in CORS_ALLOWED_ORIGINS)
 * answers 403; both before the key is checked. After it, a JSON route's body must be
 * `application/json` (415): that is what a page cannot send cross-site without a preflight.
 * Pages of a listed origin get CORS headers, and their preflights an answer, so they can call
 * the store with X-API-Key and JSON bodies and read what it answers.
 */
import os from 'node:os';
import { AppError } from '../errors.js';

/** The request headers the guard reads ('' when absent). */
export interface GuardedHeaders {
  host: string;
  origin: string;
  /** `Sec-Fetch-Site`: sent by browsers only. */
  fetchSite: string;
}

/** What the guard knows of the route. */
export interface GuardedRoute {
  /** A POST: creates, attaches, finalizes, cleans up, resets, or spends the hosted key. */
  changesState: boolean;
  /**
   * The route serves browsers only (the operator page and its files): its Host is checked even
   * without browser headers. Over plain HTTP to a name that is not `localhost`, Chromium sends no
   * `Sec-Fetch-*` (only to potentially trustworthy origins) and a navigation carries no `Origin`,
   * while the page's module scripts carry `Origin` (CORS mode): without this, the HTML loads under
   * any name and its scripts answer 421 (docs/SECURITY.md, "A web page opened on the LAN").
   */
  forBrowsers?: boolean;
}

/** Names and origins allowed beyond the built-in ones (ALLOWED_HOSTS, CORS_ALLOWED_ORIGINS). */
export interface GuardSettings {
  allowedHosts: readonly string[];
  corsAllowedOrigins: readonly string[];
}

const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;
const IPV6 = /^\[[0-9a-f:.]+(?:%[\w.-]+)?\]$/i;

/** The host part of a Host header, lower-cased, without its port (`[::1]:8001` -> `[::1]`). */
export function hostName(host: string): string {
  const lower = host.trim().toLowerCase();
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1);
  const colon = lower.lastIndexOf(':');
  return colon === -1 ? lower : lower.slice(0, colon);
}

/**
 * A checker for `settings`: answers the error a request must get, or undefined to let it on.
 * Allowed names: IP literals, `localhost`, this machine's hostname and `<hostname>.local`, and
 * ALLOWED_HOSTS. Allowed origins: the store's own (`http://<Host>`) and CORS_ALLOWED_ORIGINS.
 * @param machineName the machine's hostname (default `os.hostname()`)
 * @returns AppError misdirected_request (421, its detail naming the host and ALLOWED_HOSTS) or
 *   cross_origin_refused (403); undefined when the
 *   request may go on
 */
export function createBrowserGuard(settings: GuardSettings, machineName = os.hostname()) {
  const machine = machineName.toLowerCase();
  const names = new Set(['localhost', machine, `${machine}.local`, ...settings.allowedHosts.map((name) => name.toLowerCase())]);
  const origins = new Set(settings.corsAllowedOrigins.map((origin) => origin.toLowerCase()));
  const allowedName = (name: string): boolean => names.has(name) || IPV4.test(name) || IPV6.test(name) || name.endsWith('.localhost');

  return (headers: GuardedHeaders, route: GuardedRoute): AppError | undefined => {
    const fromBrowser = headers.origin !== '' || headers.fetchSite !== '' || route.forBrowsers === true;
    const name = hostName(headers.host);
    if (fromBrowser && !allowedName(name)) {
      return new AppError('misdirected_request', `Host ${JSON.stringify(headers.host)} is not a name of this store: `
        + `add ${JSON.stringify(name)} to ALLOWED_HOSTS (comma-separated, in the store's environment) and restart the store`);
    }
    const origin = headers.origin.toLowerCase();
    if (route.changesState && origin !== '' && origin !== `http://${headers.host.toLowerCase()}` && !origins.has(origin)) {
      return new AppError('cross_origin_refused', `Requests from origin ${headers.origin} may not change this store; add it to CORS_ALLOWED_ORIGINS`);
    }
    return undefined;
  };
}

/**
 * The error of a JSON route's request whose body is not declared `application/json` (a charset
 * parameter may follow), or undefined.
 * @returns AppError unsupported_content_type (415)
 */
export function jsonContentTypeProblem(contentType: string): AppError | undefined {
  if (/^application\/json\s*(?:;|$)/i.test(contentType)) return undefined;
  return new AppError('unsupported_content_type', `Content-Type must be application/json, got ${JSON.stringify(contentType)}`);
}

/** Request headers a listed origin's page may send, and response headers it may read. */
const CORS_REQUEST_HEADERS = 'Content-Type, X-API-Key, Range';
const CORS_EXPOSED_HEADERS = 'Content-Range, Content-Length, Content-Disposition, Retry-After, Allow, X-Source-Width, X-Source-Height';

/**
 * The CORS headers of a response to `origin`: none unless it is listed in CORS_ALLOWED_ORIGINS.
 * @param origin the request's `Origin` ('' when absent)
 */
export function corsHeaders(origin: string, allowed: ReadonlySet<string>): [string, string][] {
  if (origin === '' || !allowed.has(origin)) return [];
  return [['Access-Control-Allow-Origin', origin], ['Access-Control-Expose-Headers', CORS_EXPOSED_HEADERS], ['Vary', 'Origin']];
}

/**
 * The headers of the 204 answering a listed origin's preflight (`OPTIONS` with `Origin`), or
 * undefined when the origin is not listed (the preflight then gets the 405 of any other method).
 * @param methods the methods of the path, e.g. `POST, GET`
 */
export function preflightHeaders(origin: string, allowed: ReadonlySet<string>, methods: string): Record<string, string> | undefined {
  if (origin === '' || !allowed.has(origin)) return undefined;
  return {
    'Access-Control-Allow-Origin': origin,
    'Access-Control-Allow-Methods': methods,
    'Access-Control-Allow-Headers': CORS_REQUEST_HEADERS,
    'Access-Control-Max-Age': '600',
    Vary: 'Origin',
  };
}
