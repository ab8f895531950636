/**
 * The keys of a create body that the store ignores (docs/API.md, "Create an event", "Ignored
 * keys"): any key the create schema does not define, at the top level, in an image entry, a
 * prediction or a keypoint, but the producers' keys (producer-keys.ts), which validation drops
 * too but which are expected. `event_data` is checked by its own schema, and `custom_metadata`
 * and an image's `metadata` take any key. Found before validation, which drops them.
 */
import type { AnySchemaObject } from 'ajv/dist/2020.js';
import type { Config } from '../config.js';
import type { ValidationIssue } from '../errors.js';
import { nearestName } from '../query-language/nearest-name.js';
import { PRODUCER_KEYS } from './producer-keys.js';
import { loadSchemaFiles } from './schema-files.js';

/** A key the store ignored: where (the body's path, as a 422's `loc`), and the key it likely meant. */
export interface IgnoredKey {
  loc: (string | number)[];
  suggestion: string | undefined;
}

/** UNKNOWN_KEYS (docs/OPERATIONS.md, "Settings"): `warn` answers 201 with warnings, `reject` 422. */
export type UnknownKeyPolicy = Config['unknownKeys'];

const schemas = loadSchemaFiles();
const keysOf = (schema: AnySchemaObject): string[] => Object.keys(schema.properties as object);
const createSchema = schemas.get('create-event.json')!;
const shapes = schemas.get('shapes.json')!.$defs as Record<string, AnySchemaObject>;

const TOP_LEVEL = keysOf(createSchema);
const IMAGE_ENTRY = keysOf(createSchema.$defs.imageEntry);
/**
 * Each prediction list of an image entry, by both its spellings, and the keys its items may
 * carry: the shape's, then the producers' (the shape's first, so that a did-you-mean prefers them).
 */
const PREDICTION_LISTS: [string[], string[]][] = [
  [['object_detections', 'objectDetections'], [...keysOf(shapes.detection), ...PRODUCER_KEYS.prediction]],
  [['classifications'], [...keysOf(shapes.classification), ...PRODUCER_KEYS.classification]],
  [['instance_segmentations', 'instanceSegmentations'], [...keysOf(shapes.instanceSegmentation), ...PRODUCER_KEYS.prediction]],
  [['keypoints'], [...keysOf(shapes.keypointGroup), ...PRODUCER_KEYS.prediction]],
];
const KEYPOINT = [...keysOf(shapes.keypoint), ...PRODUCER_KEYS.keypoint];

/**
 * What producers call an image entry's prediction lists, which no edit distance reaches
 * (`detections`, roboflow/inference's `predictions`): each suggests the list it stands for, in
 * snake_case and camelCase. Compared without case and underscores, as nearestName compares.
 */
const LIST_SYNONYMS = new Map<string, [string, string]>([
  ['detections', ['object_detections', 'objectDetections']],
  ['predictions', ['object_detections', 'objectDetections']],
  ['boxes', ['object_detections', 'objectDetections']],
  ['keypointdetections', ['keypoints', 'keypoints']],
  ['poses', ['keypoints', 'keypoints']],
  ['segmentations', ['instance_segmentations', 'instanceSegmentations']],
  ['masks', ['instance_segmentations', 'instanceSegmentations']],
]);

const folded = (name: string): string => name.toLowerCase().replaceAll('_', '');

/**
 * The list a synonym of `key` stands for, spelt as `key` is (snake_case with an `_`, camelCase
 * with a capital), else as the other keys of `object` are; camelCase, the contract's input
 * spelling, when nothing tells.
 */
function synonymOf(key: string, object: Record<string, unknown>): string | undefined {
  const spellings = LIST_SYNONYMS.get(folded(key));
  if (!spellings) return undefined;
  const others = Object.keys(object);
  const snake = key.includes('_') || (!/[A-Z]/.test(key) && !others.some((other) => /[A-Z]/.test(other)) && others.some((other) => other.includes('_')));
  return spellings[snake ? 0 : 1];
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The keys of `object` that `known` does not hold, each under `loc`, with the key it likely
 * meant: a synonym's list (image entries only, `synonyms`), else the nearest name.
 */
function unknownIn(object: Record<string, unknown>, known: readonly string[], loc: (string | number)[], found: IgnoredKey[], synonyms = false): void {
  for (const key in object) {
    if (!known.includes(key)) found.push({ loc: [...loc, key], suggestion: (synonyms ? synonymOf(key, object) : undefined) ?? nearestName(key, known) });
  }
}

/**
 * Every key of a parsed create body that the store would ignore, in the body's order. Values of
 * the wrong type are left to validation.
 * @param body the parsed JSON body, camelCase or snake_case
 */
export function ignoredKeys(body: unknown): IgnoredKey[] {
  const found: IgnoredKey[] = [];
  if (!isObject(body)) return found;
  unknownIn(body, TOP_LEVEL, ['body'], found);
  if (!Array.isArray(body.images)) return found;
  body.images.forEach((image, i) => {
    if (!isObject(image)) return;
    const at = ['body', 'images', i];
    unknownIn(image, IMAGE_ENTRY, at, found, true);
    for (const [names, known] of PREDICTION_LISTS) {
      for (const name of names) {
        const list = image[name];
        if (!Array.isArray(list)) continue;
        list.forEach((prediction, k) => {
          if (!isObject(prediction)) return;
          unknownIn(prediction, known, [...at, name, k], found);
          if (name === 'keypoints' && Array.isArray(prediction.keypoints)) {
            prediction.keypoints.forEach((point, p) => isObject(point) && unknownIn(point, KEYPOINT, [...at, name, k, 'keypoints', p], found));
          }
        });
      }
    }
  });
  return found;
}

/** An ignored key as a FastAPI-shaped issue: a 201's `warnings` entry, or a 422's under UNKNOWN_KEYS=reject. */
export function ignoredKeyIssue({ loc, suggestion }: IgnoredKey, policy: UnknownKeyPolicy): ValidationIssue {
  const what = policy === 'warn' ? 'unknown key, ignored' : 'unknown key (UNKNOWN_KEYS=reject)';
  return { loc, msg: suggestion ? `${what}; did you mean '${suggestion}'?` : what, type: 'value_error.unknown_key' };
}

/**
 * The path of an ignored key with its indices left out (`images.keypointDetections`): the label
 * /metrics counts it by (docs/OPERATIONS.md, "Metrics").
 */
export function ignoredKeyPath({ loc }: IgnoredKey): string {
  return loc.slice(1).filter((part) => typeof part === 'string').join('.');
}
