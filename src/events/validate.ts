/**
 * Validation and normalisation of the POST /v2/events body (docs/API.md, "Create an event", "Event
 * schemas", "Errors": `event_data_invalid`/`unknown_event_schema`/`validation_failed`).
 *
 * The JSON Schemas under `schemas/` (draft 2020-12, the dialect of OpenAPI 3.1) are the single
 * source: ajv compiled them ahead of time into `generated/` (schema-compiler.ts) and
 * `src/http/openapi.ts` publishes the same files. The hot path is one compiled ajv call plus a
 * key-renaming pass; nothing is cloned deeply (detections, metadata objects and arrays are
 * passed through by reference).
 */
import type { AnySchemaObject, ErrorObject } from 'ajv/dist/2020.js';
import { AppError, type ValidationIssue } from '../errors.js';
import { nearestName } from '../query-language/nearest-name.js';
import { isCalendarDate } from '../store/index.js';
import { validateCreate as generatedCreate } from './generated/create-event.js';
import * as generatedEventData from './generated/event-data.js';
import type { CompiledValidator } from './schema-compiler.js';
import { loadSchemaFiles } from './schema-files.js';
import { expectedTimestamp } from './timestamp-hint.js';
import { EVENT_SCHEMAS, type CreateEventInput, type EventSchemaName, type ImageInput } from './types.js';

// ---------------------------------------------------------------------------------------------
// The validators, compiled ahead of time from the schemas (schema-compiler.ts)

/** Unknown keys outside `event_data` are dropped; `event_data` is `type: object` there, so untouched. */
const validateCreate: CompiledValidator = generatedCreate;
/** The `event_data` schemas refuse undefined fields (`event_data_invalid`): compiled strict, apart from the create body, reporting every failure. */
const eventDataValidators = new Map<EventSchemaName, CompiledValidator>(EVENT_SCHEMAS.map((name) => [name, generatedEventData[name]]));

// ---------------------------------------------------------------------------------------------
// Name maps: every accepted spelling -> snake_case, taken from the schemas' `properties`

const toSnake = (name: string): string => name.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
const toCamel = (name: string): string => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

function nameMap(schema: AnySchemaObject): Map<string, string> {
  return new Map(Object.keys(schema.properties).map((key) => [key, toSnake(key)]));
}

const createSchema = loadSchemaFiles().get('create-event.json')!;
const TOP_LEVEL_NAMES = nameMap(createSchema);
const IMAGE_NAMES = nameMap(createSchema.$defs.imageEntry);
const EVENT_DATA_NAMES = new Map(
  EVENT_SCHEMAS.map((name) => [name, nameMap(loadSchemaFiles().get(`event-data/${name}.json`)!)]),
);

// ---------------------------------------------------------------------------------------------
// ajv errors -> FastAPI issues (422) and `event_data_invalid` (400: a string and its issues)

function pointerSegments(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => {
      const seg = s.replace(/~1/g, '/').replace(/~0/g, '~');
      return /^(0|[1-9]\d*)$/.test(seg) ? Number(seg) : seg;
    });
}

/** The snake_case field of a failed `dependentSchemas/<field>/not` (both spellings given). */
function duplicatedField(err: ErrorObject): string {
  return /dependentSchemas\/([^/]+)\/not$/.exec(err.schemaPath)![1];
}

function firstType(err: ErrorObject): string {
  return String(err.params.type).split(',')[0];
}

/** The types a value may have, as a 422 names them: `string, number or boolean` (null, meaning absent, left out). */
function allowedTypes(err: ErrorObject): string {
  const types = String(err.params.type).split(',').filter((type) => type !== 'null');
  return types.length > 1 ? `${types.slice(0, -1).join(', ')} or ${types.at(-1)}` : types[0] ?? firstType(err);
}

/** One FastAPI-shaped issue for one ajv error. */
function toIssue(err: ErrorObject): ValidationIssue {
  const loc: (string | number)[] = ['body', ...pointerSegments(err.instancePath)];
  const p = err.params as Record<string, unknown>;
  if (err.propertyName !== undefined) {
    // propertyNames (custom_metadata keys): ajv reports the inner error with the key.
    loc.push(err.propertyName);
    // The schema refuses `__proto__` (a key that would set an object's prototype once read back).
    if (err.propertyName === '__proto__') return { loc, msg: 'the key __proto__ is not allowed', type: 'value_error.key' };
    return { loc, msg: 'ensure this key has 1 to 256 characters', type: 'value_error.key' };
  }
  switch (err.keyword) {
    case 'required':
      return { loc: [...loc, String(p.missingProperty)], msg: 'field required', type: 'value_error.missing' };
    case 'not': {
      const field = duplicatedField(err);
      return { loc: [...loc, field], msg: `both '${field}' and '${toCamel(field)}' given; send one spelling`, type: 'value_error.duplicate' };
    }
    case 'type':
      return { loc, msg: `value is not a valid ${allowedTypes(err)}`, type: `type_error.${firstType(err)}` };
    case 'maxLength':
      return { loc, msg: `ensure this value has at most ${p.limit} characters`, type: 'value_error.any_str.max_length' };
    case 'maxItems':
      return { loc, msg: `ensure this value has at most ${p.limit} items`, type: 'value_error.list.max_items' };
    case 'maxProperties':
      return { loc, msg: `ensure this value has at most ${p.limit} keys`, type: 'value_error.dict.max_items' };
    case 'minimum':
      return { loc, msg: `ensure this value is greater than or equal to ${p.limit}`, type: 'value_error.number.not_ge' };
    case 'maximum':
      return { loc, msg: `ensure this value is less than or equal to ${p.limit}`, type: 'value_error.number.not_le' };
    case 'pattern': // the one pattern of create-event.json is inference_timestamp's
      return { loc, msg: 'invalid datetime format', type: 'value_error.datetime' };
    /* c8 ignore next 2 */
    default: // no other keyword fails first in create-event.json (enum is `unknown_event_schema`, anyOf reports `required`)
      return { loc, msg: err.message ?? 'invalid value', type: `value_error.${err.keyword}` };
  }
}

const TIMESTAMP_KEYS: readonly (string | number)[] = ['inference_timestamp', 'inferenceTimestamp'];

/**
 * An issue of a refused inference_timestamp (a wrong type, a malformed date) says that an ISO 8601
 * string is expected and shows one (timestamp-hint.ts); any other issue is returned as it is.
 */
function withTimestampHint(issue: ValidationIssue, body: unknown): ValidationIssue {
  const [, key] = issue.loc;
  if (issue.loc.length !== 2 || !TIMESTAMP_KEYS.includes(key) || !(issue.type.startsWith('type_error') || issue.type === 'value_error.datetime')) return issue;
  return { ...issue, msg: `${issue.msg}: ${expectedTimestamp((body as Record<string, unknown>)[key as string])}` };
}

/** A required field's spellings are alternatives (`anyOf`): the snake_case one names the field, its camelCase twin and the `anyOf` itself add nothing. */
const SPELLING_TWIN = /^#\/allOf\/\d+\/anyOf(\/[1-9]\d*\/required)?$/;

/**
 * Maps failed create-body validation (ajv compiled with allErrors: every failure) to one 422
 * naming every problem: `unknown_event_schema` when the event schema is unknown (its issue first),
 * else `validation_failed`.
 */
function createBodyError(body: unknown, errors: ErrorObject[]): AppError {
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  let unknownSchema: ValidationIssue | undefined;
  const wrongType = new Set(errors.filter((err) => err.keyword === 'type').map((err) => err.instancePath));
  for (const err of errors) {
    // The spelling twins; the summary ajv adds after a key's own failure (`propertyNames`); an
    // enum's failure on a value of the wrong type, which the type's issue names.
    if (SPELLING_TWIN.test(err.schemaPath) || err.keyword === 'propertyNames' || (err.keyword === 'enum' && wrongType.has(err.instancePath))) continue;
    if (err.keyword === 'enum' && (err.instancePath === '/event_schema' || err.instancePath === '/eventSchema')) {
      const key = err.instancePath.slice(1);
      const given = (body as Record<string, unknown>)[key];
      unknownSchema = { loc: ['body', key], msg: `unknown event_schema '${String(given)}'; expected one of ${EVENT_SCHEMAS.join(', ')}`, type: 'enum' };
      continue;
    }
    const issue = withTimestampHint(toIssue(err), body);
    const key = JSON.stringify([issue.loc, issue.type]);
    if (!seen.has(key)) issues.push(issue);
    seen.add(key);
  }
  return unknownSchema ? new AppError('unknown_event_schema', [unknownSchema, ...issues]) : new AppError('validation_failed', issues);
}

const TYPE_NAMES: Record<string, string> = { integer: 'an integer', object: 'an object', array: 'an array', string: 'a string', number: 'a number', boolean: 'a boolean' };

/**
 * The field of the event schema `schema` that an unknown `key` likely meant (nearest-name.ts),
 * spelt as `key` is: snake_case when it has an `_`, else camelCase, the contract's spelling
 * (`itemcount` -> `itemCount`).
 */
function nearestField(schema: EventSchemaName, key: string): string | undefined {
  const near = nearestName(key, [...EVENT_DATA_NAMES.get(schema)!.keys()]);
  return near === undefined ? undefined : key.includes('_') ? toSnake(near) : toCamel(toSnake(near));
}

/** One problem of `event_data` (ajv error `err`) as an issue: where (`loc` under `at`), what, of which kind. */
function eventDataIssue(schema: EventSchemaName, err: ErrorObject, at: (string | number)[]): ValidationIssue {
  const path = pointerSegments(err.instancePath);
  const field = path.join('.') || 'event_data';
  const loc = [...at, ...path];
  const p = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'required':
      return { loc: [...loc, String(p.missingProperty)], msg: `${p.missingProperty} is required`, type: 'value_error.missing' };
    case 'additionalProperties': {
      const key = String(p.additionalProperty);
      const near = nearestField(schema, key);
      return { loc: [...loc, key], msg: `unknown field '${key}'${near ? ` (did you mean '${near}'?)` : ''}`, type: 'value_error.extra' };
    }
    case 'not': {
      const snake = duplicatedField(err);
      return { loc: [...loc, snake], msg: `give ${snake} or ${toCamel(snake)}, not both`, type: 'value_error.duplicate' };
    }
    case 'enum':
      return { loc, msg: `${field} must be one of ${(p.allowedValues as unknown[]).filter((v) => v !== null).join(', ')}`, type: 'type_error.enum' };
    case 'type':
      return { loc, msg: `${field} must be ${TYPE_NAMES[firstType(err)]}`, type: `type_error.${firstType(err)}` };
    case 'maxLength':
      return { loc, msg: `${field} must have at most ${p.limit} characters`, type: 'value_error.any_str.max_length' };
    case 'minimum':
      return { loc, msg: `${field} must be ${p.limit} or greater`, type: 'value_error.number.not_ge' };
    case 'pattern': // the one pattern of the event-data schemas is alert_type's
      return { loc, msg: `${field} may contain only letters, digits, underscores, spaces and hyphens`, type: 'value_error.str.regex' };
    /* c8 ignore next 2 */
    default:
      return { loc, msg: `${field} ${err.message ?? 'is invalid'}`, type: `value_error.${err.keyword}` };
  }
}

/** A required field's spellings are alternatives (`anyOf`, operator_feedback's related_event_id): the snake_case one names it. */
const DATA_SPELLING_TWIN = /^#\/anyOf(\/[1-9]\d*\/required)?$/;

/**
 * `event_data_invalid` (400, E2) naming every problem ajv found (compiled with allErrors): the
 * contract's string `detail`, naming the schema and each problem (`event_data does not conform to
 * schema 'inventory_count': unknown field 'itemcount' (did you mean 'itemCount'?); location must
 * have at most 1000 characters`), and the same problems as 422-shaped issues under `errors`.
 * @param at where event_data is in the body: `['body', 'event_data']` or `['body', 'eventData']`
 */
function eventDataError(schema: EventSchemaName, errors: ErrorObject[], at: (string | number)[]): AppError {
  const wrongType = new Set(errors.filter((err) => err.keyword === 'type').map((err) => err.instancePath));
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  for (const err of errors) {
    // The spelling twins; an enum's failure on a value of the wrong type, which the type's issue names.
    if (DATA_SPELLING_TWIN.test(err.schemaPath) || (err.keyword === 'enum' && wrongType.has(err.instancePath))) continue;
    const issue = eventDataIssue(schema, err, at);
    const key = JSON.stringify([issue.loc, issue.type]);
    if (!seen.has(key)) issues.push(issue);
    seen.add(key);
  }
  return new AppError('event_data_invalid', `event_data does not conform to schema '${schema}': ${issues.map((issue) => issue.msg).join('; ')}`, { issues });
}

// ---------------------------------------------------------------------------------------------
// Normalisation

/** Copies the fields of `raw` that are not null (or undefined) onto `target` under their snake_case names. */
function renameInto(target: Record<string, unknown>, raw: Record<string, unknown>, names: Map<string, string>): void {
  for (const key in raw) {
    const value = raw[key];
    if (value !== null && value !== undefined) target[names.get(key)!] = value;
  }
}

function normaliseImage(raw: Record<string, unknown>): ImageInput {
  const image: ImageInput = {
    label: null,
    base64_image: null,
    input_base64_image: null,
    object_detections: [],
    classifications: [],
    instance_segmentations: [],
    keypoints: [],
    metadata: {},
  };
  renameInto(image as unknown as Record<string, unknown>, raw, IMAGE_NAMES);
  return image;
}

function keyUsed(raw: Record<string, unknown>, snake: string): string {
  return raw[snake] !== undefined ? snake : toCamel(snake);
}

/**
 * Validates a parsed POST /v2/events body and returns it normalised: snake_case names at every
 * level (event_data keys too: `external_id`, `item_count`, `alert_type`, `related_event_id`...;
 * image entries: `base64_image`, `object_detections`, ...), absent or null optionals as null,
 * [] or {} as `CreateEventInput` says, `draft` false by default, a blank `solution` as null,
 * keypoint `occluded` false when absent. Keys the create schema does not define are dropped at
 * every level outside `event_data` (the body object is modified in place). Base64 is not decoded
 * here.
 *
 * Throws `AppError`:
 * - `validation_failed` (422; docs/API.md, "Errors"), detail one FastAPI issue per problem
 *   `{loc: ['body', ...path], msg, type}`, every problem the schema finds in one answer: body not an object, wrong type, missing required field
 *   (inference_timestamp, event_schema, event_data in either spelling), both spellings of one
 *   field, too-long string, too many images or metadata keys, confidence
 *   outside 0..1, bad timestamp, display_image_position not an index of images;
 * - `unknown_event_schema` (422), detail the issue with `type: 'enum'` first, then any others;
 * - `event_data_invalid` (400), every problem of `event_data` in one answer: detail a string
 *   naming the schema and each problem, e.g. "event_data does not conform to schema
 *   'quality_check': result must be one of pass, fail", and the same problems as issues
 *   (`errors`: `{loc: ['body', 'event_data', ...], msg, type}`), an unknown field's with the
 *   field it likely meant (`itemcount` -> `itemCount`).
 */
export function validateCreateBody(body: unknown): CreateEventInput {
  if (!validateCreate(body)) throw createBodyError(body, validateCreate.errors!);
  const raw = body as Record<string, unknown>;
  const input: CreateEventInput = {
    solution: null,
    workflow_id: null,
    workflow_version: null,
    inference_timestamp: '',
    device_id: null,
    stream_id: null,
    image_id: null,
    event_schema: 'custom',
    event_data: {},
    custom_metadata: {},
    images: [],
    display_image_position: null,
    draft: false,
  };
  renameInto(input as unknown as Record<string, unknown>, raw, TOP_LEVEL_NAMES);
  // A blank solution would ship with an empty useCaseId: it counts as absent (`solution_required`).
  if (input.solution !== null && input.solution.trim() === '') input.solution = null;
  if (input.images.length > 0) {
    input.images = (input.images as unknown as Record<string, unknown>[]).map(normaliseImage);
  }

  if (!isCalendarDate(input.inference_timestamp)) {
    const loc = ['body', keyUsed(raw, 'inference_timestamp')];
    throw new AppError('validation_failed', [withTimestampHint({ loc, msg: 'invalid datetime format', type: 'value_error.datetime' }, raw)]);
  }
  const position = input.display_image_position;
  if (position !== null && position >= input.images.length) {
    throw new AppError('validation_failed', [
      {
        loc: ['body', keyUsed(raw, 'display_image_position')],
        msg: `display_image_position ${position} is out of range: the event has ${input.images.length} image(s)`,
        type: 'value_error.out_of_range',
      },
    ]);
  }

  const schema = input.event_schema;
  const validateData = eventDataValidators.get(schema)!;
  if (!validateData(input.event_data)) {
    throw eventDataError(schema, validateData.errors!, ['body', keyUsed(raw, 'event_data')]);
  }
  const data: Record<string, unknown> = {};
  renameInto(data, input.event_data, EVENT_DATA_NAMES.get(schema)!);
  input.event_data = data;
  return input;
}
