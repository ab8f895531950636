/**
 * The known name a mistyped one most likely meant, for did-you-mean hints: an unknown filter of
 * the query language (event-filters.ts, query-filters.ts), an unknown query parameter
 * (src/events/query-params.ts) or an ignored key of a create body (src/events/unknown-keys.ts).
 */
import { closest, distance } from 'fastest-levenshtein';

/** Compared without case and underscores, so that `keypoint_groups` and `keypointGroups` are one name. */
const folded = (name: string): string => name.toLowerCase().replaceAll('_', '');

/**
 * The name of `known` that `name` was likely meant as, or undefined when none is close: one it
 * begins (`sort` for `sort_direction`), one it begins with beyond a plural's `s`
 * (`keypointDetections` for `keypoints`), else the nearest within a third of its length in edits
 * (Levenshtein, fastest-levenshtein), all compared without case and underscores.
 */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  const key = folded(name);
  if (key === '') return undefined;
  const forms = known.map(folded);
  const extended = forms.findIndex((form) => form.startsWith(key));
  if (extended >= 0) return known[extended];
  const stemmed = forms.findIndex((form) => form.length >= 6 && key.startsWith(form.replace(/s$/, '')));
  if (stemmed >= 0) return known[stemmed];
  const nearest = closest(key, forms);
  return distance(key, nearest) <= Math.max(1, Math.floor(key.length / 3)) ? known[forms.indexOf(nearest)] : undefined;
}
