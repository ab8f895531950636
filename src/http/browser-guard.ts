/**
 * What a web page an operator visits must not make the store do (docs/RELIABILITY.md,
 * "Security"; docs/SECURITY.md, "A web page opened on the LAN"): with auth off, a page could
 * otherwise POST events or run a cleanup (cross-site requests), or read the store under a name of
 * its own that resolves to the device (DNS rebinding). A rebinding page's reads cannot be told
 * from a producer's: over plain HTTP to a name other than `localhost`, Chromium sends neither
 * `Origin` nor `Sec-Fetch-Site` on a same-origin GET. So the Host decides, on every route and
 * whoever asks: an IP literal cannot be rebound and is always allowed; a DNS name must be one of
 * the store's (`allowedHostNames`: localhost, the machine's hostname and `<hostname>.local`, its
 * addresses, and ALLOWED_HOSTS). A producer that reaches the store by another name
 * (`http://event-store:8001`) lists it in ALLOWED_HOSTS or uses an address.
 *
 * Rules: a request whose Host is not an allowed name answers 421 (naming the host and
 * ALLOWED_HOSTS); a request that changes
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

}

/** Names and origins allowed beyond the built-in ones (ALLOWED_HOSTS, CORS_ALLOWED_ORIGINS; `allowedHostNames` adds the defaults). */
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

/** What `allowedHostNames` reads of the machine: its hostname and its network interfaces (os.networkInterfaces). */
export interface MachineNames {
  hostname: string;
  interfaces: NodeJS.Dict<os.NetworkInterfaceInfo[]>;
}

/**
 * The host names a request may carry (docs/OPERATIONS.md, "Settings", ALLOWED_HOSTS), lower-cased,
 * as they appear in a Host header without its port: the default a LAN box needs no setting for
 * (`localhost`, the machine's hostname and `<hostname>.local`, the addresses of its interfaces,
 * IPv6 in brackets) followed by the names listed in ALLOWED_HOSTS, which add to it. IP literals
 * are allowed whether listed or not (`createBrowserGuard`): an address cannot be rebound.
 * @param machine the machine (default: this one, `os.hostname()` and `os.networkInterfaces()`)
 */
export function allowedHostNames(listed: readonly string[], machine: MachineNames = { hostname: os.hostname(), interfaces: os.networkInterfaces() }): string[] {
  const hostname = machine.hostname.toLowerCase();
  const addresses = Object.values(machine.interfaces).flatMap((infos) => infos ?? [])
    .map((info) => (info.family === 'IPv6' ? `[${info.address.toLowerCase()}]` : info.address));
  return [...new Set(['localhost', hostname, `${hostname}.local`, ...addresses, ...listed.map((name) => hostName(name))])];
}

/**
 * A checker for `settings`: answers the error a request must get, or undefined to let it on.
 * Allowed names, on every route and whoever asks (docs/SECURITY.md, "A web page opened on the
 * LAN"): IP literals, names ending in `.localhost` (loopback, RFC 6761), no Host at all, and
 * `allowedHostNames(settings.allowedHosts)`. Allowed origins: the store's own (`http://<Host>`)
 * and CORS_ALLOWED_ORIGINS.
 * @param machine the machine whose names are allowed (default: this one; see `allowedHostNames`)
 * @returns AppError misdirected_request (421, its detail naming the host and ALLOWED_HOSTS) or
 *   cross_origin_refused (403); undefined when the
 *   request may go on
 */
export function createBrowserGuard(settings: GuardSettings, machine?: MachineNames) {
  const names = new Set(allowedHostNames(settings.allowedHosts, machine));
  const origins = new Set(settings.corsAllowedOrigins.map((origin) => origin.toLowerCase()));
  const allowedName = (name: string): boolean => name === '' || names.has(name) || IPV4.test(name) || IPV6.test(name) || name.endsWith('.localhost');

  return (headers: GuardedHeaders, route: GuardedRoute): AppError | undefined => {
    // Every route, GETs too: a rebinding page's GET carries no browser header (docs/SECURITY.md).
    const name = hostName(headers.host);
    if (!allowedName(name)) {
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

/**
 * The error of a browser's request for an image or its thumbnail from another site's page, or
 * undefined (docs/API.md, "Browsers"; docs/RELIABILITY.md, "Thumbnails"): `Sec-Fetch-Site: cross-site`, which
 * browsers send on an `<img>` of another site's page (Fetch Metadata, W3C), unless its `Origin` is
 * listed in CORS_ALLOWED_ORIGINS (a page that fetches with CORS). With auth off, any page could
 * otherwise make the store decode images for it, one thumbnail per `<img>`. A same-origin page,
 * a navigation (`none`) and producers, which send no Sec-Fetch-Site, are never refused here.
 * @param allowed the origins of CORS_ALLOWED_ORIGINS
 * @returns AppError cross_origin_refused (403)
 */
export function crossSiteReadProblem(headers: GuardedHeaders, allowed: ReadonlySet<string>): AppError | undefined {
  if (headers.fetchSite.toLowerCase() !== 'cross-site' || (headers.origin !== '' && allowed.has(headers.origin))) return undefined;
  return new AppError('cross_origin_refused', 'Images and thumbnails are not served to pages of other sites (Sec-Fetch-Site: cross-site); '
    + 'a page of an origin listed in CORS_ALLOWED_ORIGINS may fetch them with CORS');
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
