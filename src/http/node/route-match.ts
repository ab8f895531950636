/**
 * Route patterns of the route table (`/v2/events/:event_id`, `/*`) matched the way
 * uWebSockets.js matches them (its router's documented priorities), so both engines answer a
 * path alike: segments are compared as sent (not decoded; the Exchange decodes parameters), a
 * static segment wins over a parameter and a parameter over a wildcard at the first segment where
 * two patterns differ, and a route of the request's method wins over an `any` route. A request
 * target is taken apart first (`splitTarget`).
 */

/** A registered route: lower-case method (`get`, `post`, ... or `any`), pattern, and its value. */
interface Entry<T> {
  method: string;
  segments: string[];
  value: T;
}

/** A match: the route's value and its parameters as sent, in pattern order. */
export interface RouteMatch<T> {
  value: T;
  params: string[];
}

const STATIC = 0;
const PARAM = 1;
const WILDCARD = 2;

const kind = (segment: string): number => (segment === '*' ? WILDCARD : segment.startsWith(':') ? PARAM : STATIC);

/** Ranks of `segments` against `path` (one per pattern segment), or undefined when they do not match. */
function rank(segments: string[], path: string[]): number[] | undefined {
  const ranks: number[] = [];
  for (let i = 0; i < segments.length; i++) {
    const k = kind(segments[i]);
    if (k === WILDCARD) {
      ranks.push(WILDCARD);
      return ranks;
    }
    if (i >= path.length || (k === STATIC && segments[i] !== path[i])) return undefined;
    ranks.push(k);
  }
  return segments.length === path.length ? ranks : undefined;
}

/** Negative when ranks `a` are more specific than `b`. */
function compareRanks(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
  return b.length - a.length;
}

/** A table of route patterns. */
export class RouteMatcher<T> {
  private readonly entries: Entry<T>[] = [];

  /** Adds `pattern` for `method` (lower case; `any` for every method). */
  add(method: string, pattern: string, value: T): void {
    this.entries.push({ method: method.toLowerCase(), segments: pattern.split('/').slice(1), value });
  }

  /**
   * The best route for a request.
   * @param method the request's method (any case)
   * @param path the path as sent, without the query
   */
  match(method: string, path: string): RouteMatch<T> | undefined {
    const wanted = method.toLowerCase();
    const parts = path.split('/').slice(1);
    let best: { entry: Entry<T>; ranks: number[] } | undefined;
    for (const entry of this.entries) {
      if (entry.method !== wanted && entry.method !== 'any') continue;
      const ranks = rank(entry.segments, parts);
      if (!ranks) continue;
      const order = best ? compareRanks(ranks, best.ranks) : -1;
      if (order < 0 || (order === 0 && best!.entry.method === 'any' && entry.method !== 'any')) best = { entry, ranks };
    }
    if (!best) return undefined;
    const params = best.entry.segments.flatMap((segment, i) => (kind(segment) === PARAM ? [parts[i]] : []));
    return { value: best.entry.value, params };
  }
}

/** A request target taken apart (RFC 9112, 3.2). */
export interface RequestTarget {
  /** The path as sent, without the query. */
  url: string;
  /** The query string without `?` ('' when none). */
  query: string;
  /** The authority of an absolute-form target (`http://host:8001/health`), which stands for the Host header; undefined in origin form. */
  authority?: string;
}

/** `scheme://authority` then the path and query of an absolute-form target. */
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)(.*)$/is;

/**
 * The path, query and, in absolute form, the authority of a request target. A server must accept
 * the absolute form and take the host from it, not from the Host header (RFC 9112, 3.2.2).
 */
export function splitTarget(target: string): RequestTarget {
  const absolute = ABSOLUTE_FORM.exec(target);
  const rest = absolute ? absolute[2] : target;
  const pathAndQuery = absolute && !rest.startsWith('/') ? `/${rest}` : rest;
  const mark = pathAndQuery.indexOf('?');
  const split = mark < 0 ? { url: pathAndQuery, query: '' } : { url: pathAndQuery.slice(0, mark), query: pathAndQuery.slice(mark + 1) };
  return absolute ? { ...split, authority: absolute[1] } : split;
}
