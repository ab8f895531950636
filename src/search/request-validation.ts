/**
 * Local validation of search request bodies, before anything reaches the hosted API: allowed
 * `fields` per endpoint, `limit` <= 250, `mediaTypes` (docs/SEARCH.md, "The hosted API"). Works on
 * the wire bodies, so the store's proxy can run the same checks on what a client sent.
 */
import { SearchArgumentError } from './errors.js';
import { parseQuery } from '../query-language/query-parser.js';
import { MAX_PAGE_SIZE, MEDIA_TYPES, PROJECT_SEARCH_FIELDS, WORKSPACE_SEARCH_FIELDS } from './types.js';

type Body = Record<string, unknown>;

const PROJECT_STRINGS = ['prompt', 'like_image', 'tag', 'class_name', 'batch_id', 'annotation_job_id'];
const PROJECT_BOOLEANS = ['in_dataset', 'batch', 'annotation_job'];

/**
 * Checks a project search body (`POST /:workspace/:project/search`).
 * @throws SearchArgumentError naming the first bad member: a string member that is empty or not
 *   a string, a flag that is not a boolean, `offset` not an integer >= 0, `limit` not an integer
 *   from 1 to 250, unknown `fields` or `mediaTypes`
 */
export function validateProjectSearchBody(body: object): void {
  const record = asRecord(body);
  for (const key of PROJECT_STRINGS) optionalString(record, key);
  for (const key of PROJECT_BOOLEANS) {
    if (record[key] !== undefined && typeof record[key] !== 'boolean') throw new SearchArgumentError(`${key} must be true or false`);
  }
  integerIn(record, 'offset', 0, Number.MAX_SAFE_INTEGER);
  integerIn(record, 'limit', 1, MAX_PAGE_SIZE);
  fieldList(record.fields, PROJECT_SEARCH_FIELDS, 'project search');
  mediaTypes(record.mediaTypes);
}

/**
 * Checks a workspace search body (`POST /:workspace/search/v1`), parsing its query.
 * @throws SearchArgumentError for a missing or empty `query` (the hosted API's 400), `pageSize`
 *   not an integer of 1 or more (the hosted API sets the maximum), unknown `fields` or
 *   `mediaTypes`, an empty
 *   `continuationToken`; QuerySyntaxError (the query language's) for a malformed query
 */
export function validateWorkspaceSearchBody(body: object): void {
  const record = asRecord(body);
  validateQuery(record.query);
  integerIn(record, 'pageSize', 1, Number.MAX_SAFE_INTEGER);
  fieldList(record.fields, WORKSPACE_SEARCH_FIELDS, 'workspace search');
  mediaTypes(record.mediaTypes);
  optionalString(record, 'continuationToken');
}

/**
 * Checks that `query` is a non-empty string in the query language.
 * @throws SearchArgumentError when missing or empty; QuerySyntaxError when malformed
 */
export function validateQuery(query: unknown): void {
  if (typeof query !== 'string' || query.trim() === '') throw new SearchArgumentError('query is required and must not be empty');
  parseQuery(query);
}

/**
 * Splits a comma-separated field list (the CLI's `--fields`), trimming blanks.
 * @param allowed the fields the endpoint accepts
 * @throws SearchArgumentError naming the unknown fields and listing the allowed ones
 */
export function parseFieldList<F extends string>(text: string, allowed: readonly F[]): F[] {
  const fields = text.split(',').map((field) => field.trim()).filter((field) => field !== '');
  fieldList(fields, allowed, 'this search');
  return fields as F[];
}

function asRecord(body: object): Body {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new SearchArgumentError('The request body must be a JSON object');
  return body as Body;
}

function optionalString(record: Body, key: string): void {
  const value = record[key];
  if (value !== undefined && (typeof value !== 'string' || value === '')) throw new SearchArgumentError(`${key} must be a non-empty string`);
}

function integerIn(record: Body, key: string, min: number, max: number): void {
  const value = record[key];
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `${min} or more` : `from ${min} to ${max}`;
    throw new SearchArgumentError(`${key} must be an integer ${range}, got ${JSON.stringify(value)}`);
  }
}

function fieldList(value: unknown, allowed: readonly string[], endpoint: string): void {
  if (value === undefined) return;
  if (!Array.isArray(value) || value.length === 0 || value.some((field) => typeof field !== 'string')) {
    throw new SearchArgumentError('fields must be a non-empty list of field names');
  }
  const unknown = value.filter((field: string) => !allowed.includes(field));
  if (unknown.length > 0) {
    throw new SearchArgumentError(`Unknown field${unknown.length > 1 ? 's' : ''} for ${endpoint}: ${unknown.join(', ')}; allowed: ${allowed.join(', ')}`);
  }
}

function mediaTypes(value: unknown): void {
  if (value === undefined) return;
  const valid = Array.isArray(value) && value.length > 0
    && value.every((type) => (MEDIA_TYPES as readonly unknown[]).includes(type));
  if (!valid) throw new SearchArgumentError(`mediaTypes must be a non-empty list of ${MEDIA_TYPES.join(', ')}`);
}
