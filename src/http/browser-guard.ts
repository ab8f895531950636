/**
 * What a web page an operator visits must not make the store do (docs/RELIABILITY.md,
 * "Security"; docs/SECURITY.md, "A web page opened on the LAN"): with auth off, a page could
 * otherwise POST events or run a cleanup (cross-site requests), or read the store under a name of
 * its own that resolves to the device (DNS rebinding). A rebinding page's reads cannot be told
 * from a producer's: over plain HTTP to a name other than `localhost`, Chromium sends neither
 * `Origin` nor `Sec-Fetch-Site` on a same-origin GET. So the Host decides, on every request, before
 * it is routed, and whoever asks (`createHostCheck`): a Host that is not `host[:port]` answers 400;
 * an IP literal cannot be rebound and is always allowed; a DNS name must be one of the store's
 * (`allowedHostNames`: localhost, the machine's hostname and `<hostname>.local`, its addresses,
 * and ALLOWED_HOSTS). A producer that reaches the store by another name
 * (`http://event-store:8001`) lists it in ALLOWED_HOSTS or uses an address.
 *
 * Rules: a request without a Host, or whose Host is not `host[:port]`, answers 400; one whose Host
 * is not an allowed name answers 421 (naming the host and ALLOWED_HOSTS); both before the route
 * is matched. A request that changes state with an Origin other than the store's own (and not
 * listed in CORS_ALLOWED_ORIGINS) answers 403, before the key is checked. After it, a JSON route's
 * body must be `application/json` (415): that is what a page cannot send cross-site without a
 * preflight. Pages of a listed origin get CORS headers, and their preflights an answer, so they can
 * call the store with X-API-Key and JSON bodies and read what it answers.
 */
import net from 'node:net';
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

/** Origins allowed beyond the store's own (CORS_ALLOWED_ORIGINS). */
export interface GuardSettings {
  corsAllowedOrigins: readonly string[];
}

/**
 * A reg-name of RFC 3986 (3.2.2): unreserved characters, sub-delims and percent-escapes. An IPv4
 * address reads as one too.
 */
const REG_NAME = /^(?:[a-z0-9\-._~!$&'()*+,;=]|%[0-9a-f]{2})+$/;

/** A Host header taken apart: its name, lower-cased (IPv6 in brackets), and its port ('' when none). */
export interface HostParts {
  name: string;
  port: string;
}

/**
 * Takes a Host header (RFC 9110, 7.2: `uri-host [ ":" port ]`, the host of RFC 3986, 3.2.2) apart,
 * strictly: an IP literal in brackets that is an IPv6 address, or a non-empty reg-name, then
 * nothing or `:` and digits. Leading and trailing whitespace is not part of the value.
 * @returns its parts, or undefined when it is none of these: empty (`""`), a port that is not
 *   digits (`localhost:evil`), text after the bracket (`[::1]evil.example`), a bracket left open
 *   or holding no IPv6 address (`[evil.example`), userinfo (`user@host`), spaces, or several
 *   values joined (`a, b`: the engines join a Host sent more than once)
 */
export function parseHost(host: string): HostParts | undefined {
  const value = host.trim().toLowerCase();
  let name: string;
  let rest: string;
  if (value.startsWith('[')) {
    const close = value.indexOf(']');
    if (close < 0 || !net.isIPv6(value.slice(1, close))) return undefined;
    name = value.slice(0, close + 1);
    rest = value.slice(close + 1);
  } else {
    const colon = value.indexOf(':');
    name = colon < 0 ? value : value.slice(0, colon);
    rest = colon < 0 ? '' : value.slice(colon);
    if (!REG_NAME.test(name)) return undefined;
  }
  if (rest !== '' && !/^:\d*$/.test(rest)) return undefined;
  return { name, port: rest.slice(1) };
}

/** The host part of a Host header, lower-cased, without its port (`[::1]:8001` -> `[::1]`), leniently: for the names ALLOWED_HOSTS lists. */
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
 * The Host check for `allowedHosts` (ALLOWED_HOSTS), run on every request before it is routed
 * (route-table.ts), whoever asks (docs/SECURITY.md, "A web page opened on the LAN"). Allowed: IP
 * literals (IPv4, and IPv6 in brackets), names ending in `.localhost` (loopback, RFC 6761), and
 * `allowedHostNames(allowedHosts)`, with any port.
 * @param machine the machine whose names are allowed (default: this one; see `allowedHostNames`)
 * @returns a checker of a request's Host header ('' when it has none), answering
 *   AppError malformed_host (400) when there is none or it is not `host[:port]` (`parseHost`),
 *   misdirected_request (421, its detail naming the host and ALLOWED_HOSTS) when the name is not
 *   allowed, undefined when the request may go on
 */
export function createHostCheck(allowedHosts: readonly string[], machine?: MachineNames): (host: string) => AppError | undefined {
  const names = new Set(allowedHostNames(allowedHosts, machine));
  const allowedName = (name: string): boolean => names.has(name) || name.startsWith('[') || net.isIPv4(name) || name.endsWith('.localhost');
  return (host) => {
    const parts = parseHost(host);
    if (!parts) {
      const what = host.trim() === '' ? 'The request has no Host, or an empty one' : `Host ${JSON.stringify(host)} is not host[:port]`;
      return new AppError('malformed_host', `${what}: send the name or address the store was reached by, e.g. Host: localhost:8001`);
    }
    if (allowedName(parts.name)) return undefined;
    return new AppError('misdirected_request', `Host ${JSON.stringify(host)} is not a name of this store: `
      + `add ${JSON.stringify(parts.name)} to ALLOWED_HOSTS (comma-separated, in the store's environment) and restart the store`);
  };
}

/**
 * A checker for `settings`: answers the error a request must get, or undefined to let it on.
 * Allowed origins: the store's own (`http://<Host>`) and CORS_ALLOWED_ORIGINS. The Host itself
 * was checked before the request was routed (`createHostCheck`).
 * @returns AppError cross_origin_refused (403); undefined when the request may go on
 */
export function createBrowserGuard(settings: GuardSettings) {
  const origins = new Set(settings.corsAllowedOrigins.map((origin) => origin.toLowerCase()));
  return (headers: GuardedHeaders, route: GuardedRoute): AppError | undefined => {
    const origin = headers.origin.toLowerCase();
    if (route.changesState && origin !== '' && origin !== `http://${headers.host.trim().toLowerCase()}` && !origins.has(origin)) {
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
const CORS_EXPOSED_HEADERS = 'Content-Range, Content-Length, Content-Disposition, Retry-After, Allow, X-Source-Width, X-Source-Height, X-Edge-Events-Warnings';

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
