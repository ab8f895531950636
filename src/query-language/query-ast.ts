/**
 * The syntax tree of the search query language (docs/SEARCH.md, "Query language").
 * Every node carries the span of query text it came from, so tools can point at it.
 */

/** A half-open range `[start, end)` of UTF-16 offsets into the query string. */
export interface Span {
  start: number;
  end: number;
}

/** Comparison operators of `class:<CLASS><op>N` and `date<op>YYYY-MM-DD`. */
export type Comparison = '=' | '>' | '>=' | '<' | '<=';

/** Splits the `split:` filter accepts. */
export const SPLITS = ['train', 'test', 'valid'] as const;
export type Split = (typeof SPLITS)[number];

/** Every filter selector of the query language (docs/SEARCH.md, "Query language"). */
export const FILTER_KEYS = [
  'like-image', 'tag', 'filename', 'split', 'job',
  'min-width', 'max-width', 'min-height', 'max-height', 'min-annotations', 'max-annotations',
  'class', 'date', 'project', 'dataset',
] as const;
export type FilterKey = (typeof FILTER_KEYS)[number];

/**
 * Both sides of a boolean operator, in source order; juxtaposition is an `and`. Nodes are generic
 * over the filters of a dialect: the hosted search's (`FilterNode`, the default) or the store's
 * own events (event-filters.ts).
 */
export interface AndNode<F extends FilterBase = FilterNode> { type: 'and'; children: QueryNode<F>[]; span: Span }
export interface OrNode<F extends FilterBase = FilterNode> { type: 'or'; children: QueryNode<F>[]; span: Span }
/** `NOT x` or a leading minus `-x`. */
export interface NotNode<F extends FilterBase = FilterNode> { type: 'not'; child: QueryNode<F>; span: Span }
/** Free text: semantic search. Adjacent words and quoted phrases are joined by one space. */
export interface TextNode { type: 'text'; text: string; span: Span }
/** The bare query `*`: every image. */
export interface AllNode { type: 'all'; span: Span }

/** What every filter node of any dialect has. */
export interface FilterBase { type: 'filter'; span: Span }
export interface LikeImageFilter extends FilterBase { key: 'like-image'; imageId: string }
export interface TagFilter extends FilterBase { key: 'tag'; tag: string }
/**
 * `filename:` with a `*` at the beginning and/or end: `prefix` means the name starts with
 * `pattern` (`name*`), `suffix` ends with it (`*name`), `contains` both (`*name*`).
 */
export interface FilenameFilter extends FilterBase {
  key: 'filename';
  pattern: string;
  match: 'exact' | 'prefix' | 'suffix' | 'contains';
}
export interface SplitFilter extends FilterBase { key: 'split'; split: Split }
export interface JobFilter extends FilterBase { key: 'job'; jobId: string }
/** `min-width:X` .. `max-annotations:X`: `bound` `min` means at least, `max` at most. */
export interface RangeFilter extends FilterBase {
  key: 'min-width' | 'max-width' | 'min-height' | 'max-height' | 'min-annotations' | 'max-annotations';
  measure: 'width' | 'height' | 'annotations';
  bound: 'min' | 'max';
  value: number;
}
/** `class:X` (at least one annotation of X) or `class:X<op>N` (count of X compared with N). */
export interface ClassFilter extends FilterBase {
  key: 'class';
  className: string;
  count?: { op: Comparison; value: number };
}
/** `date:D` (`op` `=`) or `date<op>D`; `date` is `YYYY-MM-DD`, compared on the upload day. */
export interface DateFilter extends FilterBase { key: 'date'; op: Comparison; date: string }
/** Workspace endpoint only: images in that project (`project:`) or in its dataset (`dataset:`). */
export interface ProjectFilter extends FilterBase { key: 'project' | 'dataset'; project: string }

export type FilterNode =
  | LikeImageFilter | TagFilter | FilenameFilter | SplitFilter | JobFilter
  | RangeFilter | ClassFilter | DateFilter | ProjectFilter;

export type QueryNode<F extends FilterBase = FilterNode> = AndNode<F> | OrNode<F> | NotNode<F> | TextNode | AllNode | F;
