/**
 * What a web page an operator visits must not make the store do (docs/RELIABILITY.md,
 * "Security"): with auth off, a page could otherwise POST events or run a cleanup (cross-site
 * requests), or read the store under a name of its own that resolves to the device (DNS
 * rebinding). Browsers say who they are: they send `Origin` on cross-site requests and
 * `Sec-Fetch-Site` on every request. Producers (Python, curl, other services) send neither and
 * reach the store by any name (`http://event-store:8001`): they are never refused for their Host.
 *
 * Rules, in order: a browser request whose Host is not an allowed name answers 421; a request
 * that changes state with an Origin other than the store's own (and not listed in
 * CORS_ALLOWED_ORIGINS) answers 403; a JSON route's body must be `application/json` (415).
 */
import os from 'node:os';
import { AppError } from '../errors.js';

/** The request headers the guard reads ('' when absent). */
export interface GuardedHeaders {
  host: string;
  origin: string;
  /** `Sec-Fetch-Site`: sent by browsers only. */
  fetchSite: string;
  contentType: string;
}

/** What the guard knows of the route. */
export interface GuardedRoute {
  /** A POST: creates, attaches, finalizes, cleans up, resets, or spends the hosted key. */
  changesState: boolean;
  /** Its body is JSON (create, reset confirm, the search gateway's POSTs). */
  jsonBody: boolean;
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
 * @returns AppError misdirected_request (421), cross_origin_refused (403) or
 *   unsupported_content_type (415); undefined when the request may go on
 */
export function createBrowserGuard(settings: GuardSettings, machineName = os.hostname()) {
  const machine = machineName.toLowerCase();
  const names = new Set(['localhost', machine, `${machine}.local`, ...settings.allowedHosts.map((name) => name.toLowerCase())]);
  const origins = new Set(settings.corsAllowedOrigins.map((origin) => origin.toLowerCase()));
  const allowedName = (name: string): boolean => names.has(name) || IPV4.test(name) || IPV6.test(name) || name.endsWith('.localhost');

  return (headers: GuardedHeaders, route: GuardedRoute): AppError | undefined => {
    const fromBrowser = headers.origin !== '' || headers.fetchSite !== '';
    if (fromBrowser && !allowedName(hostName(headers.host))) {
      return new AppError('misdirected_request', `Host ${JSON.stringify(headers.host)} is not a name of this store; add it to ALLOWED_HOSTS`);
    }
    const origin = headers.origin.toLowerCase();
    if (route.changesState && origin !== '' && origin !== `http://${headers.host.toLowerCase()}` && !origins.has(origin)) {
      return new AppError('cross_origin_refused', `Requests from origin ${headers.origin} may not change this store; add it to CORS_ALLOWED_ORIGINS`);
    }
    if (route.jsonBody && !/^application\/json\s*(?:;|$)/i.test(headers.contentType)) {
      return new AppError('unsupported_content_type', `Content-Type must be application/json, got ${JSON.stringify(headers.contentType)}`);
    }
    return undefined;
  };
}
