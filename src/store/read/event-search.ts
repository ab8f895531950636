/**
 * Conditions of the event search (docs/API.md, "Event search") and their query plan. A condition
 * tree (AND, OR, NOT over field, class, metadata, time, annotation, media and draft conditions)
 * is planned like a list query (event-query.ts): every condition an index answers offers a cursor
 * over its entries and a point probe; an AND drives from its sparsest indexed child (estimated
 * from a sample of its entries) and probes the other indexed ones, an OR of indexed children is
 * the union of their cursors. Whatever the index cannot decide is checked on the decoded records
 * the plan yields, within the scan budget, so a condition no index covers never reads the whole
 * store in one request. Time conditions of the top-level AND bound every cursor instead.
 */
import type { Key } from 'lmdb';
import { NO_VALUES, ProbeCursor, UnionCursor, type CreatedAtCursor, type Direction } from '../index/created-at-cursors.js';
import type { IndexSource } from '../index/index-source.js';
import {
  indexedAsItself, metadataIndexedExactly, metadataMatches, type MetadataCondition, type ScanPlan,
} from './event-query.js';
import type { EventRecord } from '../record/event-record.js';
import { classPrefix, DRAFTS_PREFIX, fieldPrefix, indexedValue, metadataPrefix, predictionsOf, type IndexedField } from '../index/index-keys.js';
import type { StoreView } from './store-view.js';

/** Comparison of a count with a number. */
export type CountComparison = '=' | '>' | '>=' | '<' | '<=';

/** Media an event can hold: an image with a file sent, a video, a local-only file. */
export type SearchMedia = 'image' | 'video' | 'file';

/** One condition of an event search; times in µs since the epoch, bounds inclusive. */
export type SearchCondition =
  | { kind: 'all' }
  | { kind: 'and'; all: SearchCondition[] }
  | { kind: 'or'; any: SearchCondition[] }
  | { kind: 'not'; condition: SearchCondition }
  /** The field holds exactly `value`. */
  | { kind: 'field'; field: IndexedField; value: string }
  /**
   * Predictions of `className` (at or above `minConfidence`, when given): at least one, or a
   * count compared with `count.value`.
   */
  | { kind: 'class'; className: string; minConfidence?: number; count?: { op: CountComparison; value: number } }
  /** Some prediction, of any class, at or above `min`. */
  | { kind: 'confidence'; min: number }
  | { kind: 'metadata'; condition: MetadataCondition }
  | { kind: 'time'; from: number; to: number }
  /** Predictions over the event's images, from `min` to `max` (either may be absent). */
  | { kind: 'annotations'; min?: number; max?: number }
  | { kind: 'has'; media: SearchMedia }
  | { kind: 'draft'; draft: boolean };

/** True when `count` passes `op value`. */
export function compareCount(count: number, op: CountComparison, value: number): boolean {
  switch (op) {
    case '=': return count === value;
    case '>': return count > value;
    case '>=': return count >= value;
    case '<': return count < value;
    case '<=': return count <= value;
  }
}

function classCount(record: EventRecord, className: string, minConfidence: number): number {
  let count = 0;
  for (const prediction of predictionsOf(record)) if (prediction.class === className && prediction.confidence >= minConfidence) count++;
  return count;
}

function annotationCount(record: EventRecord): number {
  let count = 0;
  for (const image of record.images) {
    count += image.object_detections.length + image.classifications.length + image.instance_segmentations.length + image.keypoints.length;
  }
  return count;
}

function hasMedia(record: EventRecord, media: SearchMedia): boolean {
  switch (media) {
    case 'image': return record.images.some((image) => image.file_id !== null);
    case 'video': return record.videos.length > 0;
    case 'file': return record.local_only_files.length > 0;
  }
}

/** True when the record passes the condition (docs/API.md, "Event search", gives each rule). */
export function matchesCondition(record: EventRecord, condition: SearchCondition): boolean {
  switch (condition.kind) {
    case 'all': return true;
    case 'and': return condition.all.every((child) => matchesCondition(record, child));
    case 'or': return condition.any.some((child) => matchesCondition(record, child));
    case 'not': return !matchesCondition(record, condition.condition);
    case 'field': return indexedValue(record, condition.field) === condition.value;
    case 'class': {
      const count = classCount(record, condition.className, condition.minConfidence ?? 0);
      return condition.count ? compareCount(count, condition.count.op, condition.count.value) : count > 0;
    }
    case 'confidence': {
      for (const prediction of predictionsOf(record)) if (prediction.confidence >= condition.min) return true;
      return false;
    }
    case 'metadata': return metadataMatches(record, condition.condition);
    case 'time': return record.created_at >= condition.from && record.created_at <= condition.to;
    case 'annotations': {
      const count = annotationCount(record);
      return count >= (condition.min ?? 0) && count <= (condition.max ?? Infinity);
    }
    case 'has': return hasMedia(record, condition.media);
    case 'draft': return record.draft === condition.draft;
  }
}

/** Where and how a search is planned. */
export interface SearchPlanOptions {
  /** Only events created at or before this (µs): the page cursor. */
  before?: number;
  /**
   * The index entries of classes, streams and solutions cover every event (the search index
   * backfill is done: search-index.ts); until then those conditions are checked on records.
   */
  searchIndexReady: boolean;
  direction: Direction;
}

/** How the index answers one condition within [lo, hi]. */
interface Access {
  /** A cursor over a superset of the matching created_at values (every one when `exact`). */
  open(): CreatedAtCursor;
  /** Estimated values the cursor yields. */
  estimate: number;
  exact: boolean;
}

/** An exact membership test by index lookups, for a condition in an AND that does not drive. */
type Probe = (ts: number) => boolean;

/** Fields whose index entries exist only once the search index backfill is done. */
const BACKFILLED_FIELDS = new Set<IndexedField>(['stream_id', 'solution']);

/** The time range of the events the store holds, clipped to the top-level time conditions and `before`. */
interface Window {
  lo: number;
  hi: number;
}

class SearchPlanner {
  constructor(
    private readonly source: IndexSource,
    private readonly window: Window,
    private readonly options: SearchPlanOptions,
  ) {}

  /** The cursor and probe of an index range under `prefixes` (exact when the index decides). */
  private range(prefixes: Key[][], exact: boolean): { access: Access; probe: Probe | null } {
    const { source, window, options } = this;
    const open = (): CreatedAtCursor => {
      const cursors = prefixes.map((prefix) => source.keyRange(prefix, window.lo, window.hi, options.direction));
      return cursors.length === 1 ? cursors[0] : new UnionCursor(cursors, options.direction);
    };
    const estimate = source.estimate(prefixes, window.lo, window.hi);
    const probe = exact ? (ts: number) => prefixes.some((prefix) => source.has(prefix, ts)) : null;
    return { access: { open, estimate, exact }, probe };
  }

  /** The cursor of the primary key range within [from, to] ∩ the window (exact). */
  private timeRange(from: number, to: number): Access {
    const lo = Math.max(from, this.window.lo);
    const hi = Math.min(to, this.window.hi);
    return { open: () => this.source.eventRange(lo, hi, this.options.direction), estimate: Infinity, exact: true };
  }

  plan(condition: SearchCondition): { access: Access | null; probe: Probe | null } {
    switch (condition.kind) {
      case 'all':
        return { access: this.timeRange(-Infinity, Infinity), probe: () => true };
      case 'field': {
        if (BACKFILLED_FIELDS.has(condition.field) && !this.options.searchIndexReady) return { access: null, probe: null };
        return this.range([fieldPrefix(condition.field, condition.value)], indexedAsItself(condition.value));
      }
      case 'class': {
        if (!this.options.searchIndexReady) return { access: null, probe: null };
        const { count } = condition;
        // A count that zero satisfies (class:C<2, class:C=0) matches events without C: no index has them.
        if (count && compareCount(0, count.op, count.value)) return { access: null, probe: null };
        const plain = count === undefined && condition.minConfidence === undefined;
        return this.range([classPrefix(condition.className)], plain && indexedAsItself(condition.className));
      }
      case 'metadata': {
        if (condition.condition.op !== 'eq') return { access: null, probe: null };
        return this.range([metadataPrefix(condition.condition.key, condition.condition.value)], metadataIndexedExactly(condition.condition));
      }
      case 'time':
        return { access: this.timeRange(condition.from, condition.to), probe: (ts) => ts >= condition.from && ts <= condition.to };
      case 'draft': {
        const { source } = this;
        if (!condition.draft) return { access: null, probe: (ts) => !source.has(DRAFTS_PREFIX, ts) };
        return this.range([[...DRAFTS_PREFIX]], true);
      }
      case 'not': {
        const inner = this.plan(condition.condition).probe;
        return { access: null, probe: inner ? (ts) => !inner(ts) : null };
      }
      case 'or':
        return this.planOr(condition.any);
      case 'and':
        return this.planAnd(condition.all);
      default:
        return { access: null, probe: null };
    }
  }

  private planOr(children: SearchCondition[]): { access: Access | null; probe: Probe | null } {
    const plans = children.map((child) => this.plan(child));
    const probes = plans.map((p) => p.probe);
    const probe = probes.every((p) => p !== null) ? (ts: number) => probes.some((p) => p!(ts)) : null;
    if (!plans.every((p) => p.access !== null)) return { access: null, probe };
    const accesses = plans.map((p) => p.access!);
    const access: Access = {
      open: () => new UnionCursor(accesses.map((a) => a.open()), this.options.direction),
      estimate: accesses.reduce((sum, a) => sum + a.estimate, 0),
      exact: accesses.every((a) => a.exact),
    };
    return { access, probe };
  }

  private planAnd(children: SearchCondition[]): { access: Access | null; probe: Probe | null } {
    const plans = children.map((child) => this.plan(child));
    const probes = plans.map((p) => p.probe);
    const probe = probes.every((p) => p !== null) ? (ts: number) => probes.every((p) => p!(ts)) : null;
    let driver = -1;
    plans.forEach((p, i) => {
      if (p.access && (driver === -1 || p.access.estimate < plans[driver].access!.estimate)) driver = i;
    });
    // No child has entries to drive from: the AND walks every event in the window and probes.
    if (driver === -1 && !probes.some((p) => p !== null)) return { access: null, probe };
    const driving = driver === -1 ? this.timeRange(-Infinity, Infinity) : plans[driver].access!;
    const others = plans.filter((_, i) => i !== driver);
    const checks = others.map((p) => p.probe).filter((p): p is Probe => p !== null);
    const access: Access = {
      open: () => (checks.length === 0 ? driving.open() : new ProbeCursor(driving.open(), checks, this.options.direction)),
      estimate: driving.estimate,
      exact: driving.exact && checks.length === others.length,
    };
    return { access, probe };
  }
}

/** Splits the time conditions off a top-level AND (or a lone time condition): they bound every cursor. */
function topLevelTimes(condition: SearchCondition): { lo: number; hi: number; rest: SearchCondition } {
  const parts = condition.kind === 'and' ? condition.all : [condition];
  let lo = -Infinity;
  let hi = Infinity;
  const rest: SearchCondition[] = [];
  for (const part of parts) {
    if (part.kind === 'time') {
      lo = Math.max(lo, part.from);
      hi = Math.min(hi, part.to);
    } else {
      rest.push(part);
    }
  }
  if (rest.length === 0) return { lo, hi, rest: { kind: 'all' } };
  return { lo, hi, rest: rest.length === 1 ? rest[0] : { kind: 'and', all: rest } };
}

/**
 * Plans `condition` over the store: a cursor over the created_at values of candidate events
 * (all of them matching when `exact`) and the check of a decoded record.
 * @returns a plan for `scanPlan` (event-query.ts); its cursor must be closed (scanPlan does)
 */
export function planSearch(store: StoreView, condition: SearchCondition, options: SearchPlanOptions): ScanPlan {
  const matches = (record: EventRecord) => matchesCondition(record, condition);
  const times = topLevelTimes(condition);
  // The same plan over LMDB and over the head's own index (store-view.ts `withHead`): exact
  // only when both are.
  let exact = true;
  const plan = (source: IndexSource): CreatedAtCursor => {
    const planned = planIndexSearch(source, condition, times, options);
    exact &&= planned.exact;
    return planned.cursor;
  };
  const hi = Math.min(times.hi, options.before ?? Infinity);
  const cursor = store.withHead(plan, times.lo, hi, options.direction, matches);
  return { cursor, exact, matches };
}

/** The plan of a search over one index source, LMDB or the head's. */
function planIndexSearch(source: IndexSource, condition: SearchCondition, times: ReturnType<typeof topLevelTimes>, options: SearchPlanOptions): ScanPlan {
  const matches = (record: EventRecord) => matchesCondition(record, condition);
  const bounds = source.bounds();
  const window = {
    lo: Math.max(times.lo, bounds?.oldest ?? 0),
    hi: Math.min(times.hi, options.before ?? Infinity, bounds?.newest ?? 0),
  };
  if (!bounds || window.lo > window.hi) return { cursor: NO_VALUES, exact: true, matches };
  const planner = new SearchPlanner(source, window, options);
  const { access, probe } = planner.plan(times.rest);
  if (access) return { cursor: access.open(), exact: access.exact, matches };
  const every = source.eventRange(window.lo, window.hi, options.direction);
  // A condition only probes answer (draft:false, -device:cam-1): every event, probed, none decoded.
  if (probe) return { cursor: new ProbeCursor(every, [probe], options.direction), exact: true, matches };
  return { cursor: every, exact: false, matches };
}
