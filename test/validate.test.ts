/**
 * validateCreateBody (docs/API.md, "Create an event", "Event schemas", E2/E4/E7),
 * the response schemas, and the OpenAPI document built from the route table and the same schema files.
 */
import t from 'tap';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import { AppError } from '../src/errors.js';
import { validateCreateBody } from '../src/events/validate.js';
import { RESPONSE_SCHEMA_NAMES, responseProblems, responseValidator } from './support/response-shapes.js';
import { buildOpenApiDocument, openApiJson, openApiPath } from '../src/http/openapi.js';
import { allRoutes } from '../src/http/server.js';
import type { CreateEventInput } from '../src/events/types.js';

type Body = Record<string, unknown>;

const TS = '2025-01-31T12:00:00.123Z';
const base = (extra: Body = {}): Body => ({ inference_timestamp: TS, event_schema: 'custom', event_data: {}, ...extra });
const detection = { class: 'cat', x: 10, y: 20, width: 30, height: 40, confidence: 0.9 };

/** Runs validateCreateBody and returns the AppError it throws (fails the test if none). */
function rejection(body: unknown): AppError {
  try {
    validateCreateBody(body);
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error(`accepted: ${JSON.stringify(body)}`);
}

// ---------------------------------------------------------------------------------------------
// Valid bodies, both spellings, all five schemas

const validEventData: [string, Body, Body, Body][] = [
  // schema, snake input, camel input, normalised event_data
  ['quality_check', { result: 'pass', external_id: 'A-1' }, { result: 'pass', externalId: 'A-1' }, { result: 'pass', external_id: 'A-1' }],
  [
    'inventory_count',
    { location: 'shelf 3', item_count: 0, item_type: 'box', external_id: 'x' },
    { location: 'shelf 3', itemCount: 0, itemType: 'box', externalId: 'x' },
    { location: 'shelf 3', item_count: 0, item_type: 'box', external_id: 'x' },
  ],
  [
    'safety_alert',
    { alert_type: 'no_helmet zone-2', severity: 'high', description: 'd', external_id: 'e' },
    { alertType: 'no_helmet zone-2', severity: 'high', description: 'd', externalId: 'e' },
    { alert_type: 'no_helmet zone-2', severity: 'high', description: 'd', external_id: 'e' },
  ],
  [
    'operator_feedback',
    { related_event_id: 'ev-1', feedback: 'incorrect' },
    { relatedEventId: 'ev-1', feedback: 'incorrect' },
    { related_event_id: 'ev-1', feedback: 'incorrect' },
  ],
  ['custom', { external_id: 'c', value: 'v' }, { externalId: 'c', value: 'v' }, { external_id: 'c', value: 'v' }],
];

t.test('valid bodies in both spellings normalise to snake_case', async (t) => {
  for (const [schema, snakeData, camelData, expected] of validEventData) {
    const snake = validateCreateBody({
      solution: 'sol',
      workflow_id: 'wf',
      workflow_version: '1',
      inference_timestamp: TS,
      device_id: 'dev',
      stream_id: 'cam',
      image_id: 'img',
      event_schema: schema,
      event_data: snakeData,
      custom_metadata: { line: 'A', count: 3, ok: true },
      images: [
        {
          label: 'top',
          base64_image: 'AAAA',
          input_base64_image: 'BBBB',
          object_detections: [detection],
          classifications: [{ class: 'ok', confidence: 1 }],
          instance_segmentations: [{ ...detection, points: [[1, 2], [3, 4]] }],
          keypoints: [{ ...detection, keypoints: [{ id: 0, x: 1, y: 2, occluded: false }] }],
          metadata: { blurry: false },
        },
      ],
      display_image_position: 0,
      draft: true,
    });
    const camel = validateCreateBody({
      solution: 'sol',
      workflowId: 'wf',
      workflowVersion: '1',
      inferenceTimestamp: TS,
      deviceId: 'dev',
      streamId: 'cam',
      imageId: 'img',
      eventSchema: schema,
      eventData: camelData,
      customMetadata: { line: 'A', count: 3, ok: true },
      images: [
        {
          label: 'top',
          base64Image: 'AAAA',
          inputBase64Image: 'BBBB',
          objectDetections: [detection],
          classifications: [{ class: 'ok', confidence: 1 }],
          instanceSegmentations: [{ ...detection, points: [[1, 2], [3, 4]] }],
          keypoints: [{ ...detection, keypoints: [{ id: 0, x: 1, y: 2, occluded: false }] }],
          metadata: { blurry: false },
        },
      ],
      displayImagePosition: 0,
      draft: true,
    });
    t.same(snake.event_data, expected, `${schema}: snake event_data`);
    t.same(camel, snake, `${schema}: camel and snake give the same input`);
    t.equal(snake.event_schema, schema);
    t.same(snake.images[0], {
      label: 'top',
      base64_image: 'AAAA',
      input_base64_image: 'BBBB',
      object_detections: [detection],
      classifications: [{ class: 'ok', confidence: 1 }],
      instance_segmentations: [{ ...detection, points: [[1, 2], [3, 4]] }],
      keypoints: [{ ...detection, keypoints: [{ id: 0, x: 1, y: 2, occluded: false }] }],
      metadata: { blurry: false },
    });
  }
});

t.test('defaults: missing or null optionals become null, [] or {}; draft false', async (t) => {
  const expected: CreateEventInput = {
    solution: null,
    workflow_id: null,
    workflow_version: null,
    inference_timestamp: TS,
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
  t.same(validateCreateBody(base()), expected);
  const nulls = base({ solution: null, workflowId: null, device_id: null, custom_metadata: null, images: null, draft: null, displayImagePosition: null });
  t.same(validateCreateBody(nulls), expected);
  t.same(validateCreateBody(base({ images: [{}] })).images, [
    { label: null, base64_image: null, input_base64_image: null, object_detections: [], classifications: [], instance_segmentations: [], keypoints: [], metadata: {} },
  ]);
  t.same(validateCreateBody(base({ event_data: { external_id: null, value: 'v' } })).event_data, { value: 'v' }, 'null event_data optionals dropped');
  t.same(validateCreateBody(base({ event_schema: 'safety_alert', event_data: { severity: null } })).event_data, {});
});

t.test('outside event_data, unknown keys are dropped at every level; known keys keep their types', async (t) => {
  const input = validateCreateBody(base({
    eventType: 'x', // a cloud payload's field
    useCaseId: 'y',
    images: [{
      url: 'x',
      objectDetections: [{ ...detection, class_id: 3, detection_id: 'd-1', tracker_id: 7, parent_id: 'p' }],
      classifications: [{ class: 'cat', confidence: 0.9, class_id: 3 }],
      instance_segmentations: [{ ...detection, points: [[1, 2]], detection_id: 'd-2' }],
      keypoints: [{ ...detection, keypoints: [{ id: 0, x: 1, y: 2, class_name: 'nose', confidence: 0.8 }], class_id: 0 }],
    }],
  }));
  t.notOk('eventType' in input || 'useCaseId' in input, 'top-level keys dropped');
  const [stored] = input.images;
  t.notOk('url' in stored, 'image entry keys dropped');
  t.same(stored.object_detections, [detection], 'detection keeps exactly its defined keys');
  t.same(stored.classifications, [{ class: 'cat', confidence: 0.9 }]);
  t.same(stored.instance_segmentations, [{ ...detection, points: [[1, 2]] }]);
  t.same(stored.keypoints, [{ ...detection, keypoints: [{ id: 0, x: 1, y: 2, occluded: false }] }], 'occluded defaults to false');
  t.equal(rejection(base({ event_schema: 'custom', event_data: { colour: 'red' } })).code, 'event_data_invalid', 'event_data still refuses them');
});

t.test('a blank solution counts as absent', async (t) => {
  t.equal(validateCreateBody(base({ solution: '' })).solution, null);
  t.equal(validateCreateBody(base({ solution: '  \t' })).solution, null);
  t.equal(validateCreateBody(base({ solution: 'sol' })).solution, 'sol');
});

t.test('a body without unknown keys is not mutated', async (t) => {
  const body: Body = { inferenceTimestamp: TS, eventSchema: 'custom', eventData: { externalId: 'x' }, images: [{ base64Image: 'AA' }] };
  const copy = structuredClone(body);
  validateCreateBody(body);
  t.same(body, copy);
});

t.test('accepted timestamp forms', async (t) => {
  for (const ts of ['2025-01-31T12:00', '2025-01-31T12:00:59', '2025-01-31T12:00:00.123456+05:30', '2024-02-29T23:59:59-08:00', '2025-12-31T00:00:00Z']) {
    t.equal(validateCreateBody(base({ inference_timestamp: ts })).inference_timestamp, ts, ts);
  }
});

// ---------------------------------------------------------------------------------------------
// 422 request validation (E7)

const long = (n: number): string => 'x'.repeat(n);
const metadata101 = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i]));
const image = (extra: Body): Body => ({ images: [extra] });

/** [name, body, expected loc, msg fragment] */
const invalid422: [string, unknown, (string | number)[], string][] = [
  ['null body', null, ['body'], 'not a valid object'],
  ['array body', [], ['body'], 'not a valid object'],
  ['string body', 'event', ['body'], 'not a valid object'],
  ['missing inference_timestamp', { event_schema: 'custom', event_data: {} }, ['body', 'inference_timestamp'], 'field required'],
  ['missing event_schema', { inference_timestamp: TS, event_data: {} }, ['body', 'event_schema'], 'field required'],
  ['missing event_data', { inference_timestamp: TS, eventSchema: 'custom' }, ['body', 'event_data'], 'field required'],
  ['both spellings: workflow_id', base({ workflow_id: 'a', workflowId: 'b' }), ['body', 'workflow_id'], "both 'workflow_id' and 'workflowId'"],
  ['both spellings: inference_timestamp', base({ inferenceTimestamp: TS }), ['body', 'inference_timestamp'], 'both'],
  ['both spellings: event_data', base({ eventData: {} }), ['body', 'event_data'], 'both'],
  ['both spellings in an image', base(image({ base64_image: 'A', base64Image: 'A' })), ['body', 'images', 0, 'base64_image'], 'both'],
  ['solution 257', base({ solution: long(257) }), ['body', 'solution'], 'at most 256 characters'],
  ['workflow_id 257', base({ workflow_id: long(257) }), ['body', 'workflow_id'], 'at most 256 characters'],
  ['workflowVersion 65', base({ workflowVersion: long(65) }), ['body', 'workflowVersion'], 'at most 64 characters'],
  ['device_id 257', base({ device_id: long(257) }), ['body', 'device_id'], 'at most 256 characters'],
  ['streamId 257', base({ streamId: long(257) }), ['body', 'streamId'], 'at most 256 characters'],
  ['image_id 257', base({ image_id: long(257) }), ['body', 'image_id'], 'at most 256 characters'],
  ['solution not a string', base({ solution: 5 }), ['body', 'solution'], 'not a valid string'],
  ['event_data not an object', base({ event_data: [] }), ['body', 'event_data'], 'not a valid object'],
  ['event_schema not a string', base({ event_schema: 3 }), ['body', 'event_schema'], 'not a valid string'],
  ['draft not a boolean', base({ draft: 'yes' }), ['body', 'draft'], 'not a valid boolean'],
  ['timestamp free text', base({ inference_timestamp: 'yesterday' }), ['body', 'inference_timestamp'], 'invalid datetime'],
  ['timestamp date only', base({ inference_timestamp: '2025-01-31' }), ['body', 'inference_timestamp'], 'invalid datetime'],
  ['timestamp month 13', base({ inference_timestamp: '2025-13-01T00:00:00Z' }), ['body', 'inference_timestamp'], 'invalid datetime'],
  ['timestamp Feb 30', { inferenceTimestamp: '2025-02-30T00:00:00Z', event_schema: 'custom', event_data: {} }, ['body', 'inferenceTimestamp'], 'invalid datetime'],
  ['timestamp Feb 29 of 2025', base({ inference_timestamp: '2025-02-29T00:00:00Z' }), ['body', 'inference_timestamp'], 'invalid datetime'],
  ['timestamp not a string', base({ inference_timestamp: 1738324800 }), ['body', 'inference_timestamp'], 'not a valid string'],
  ['custom_metadata 101 keys', base({ custom_metadata: metadata101 }), ['body', 'custom_metadata'], 'at most 100 keys'],
  ['custom_metadata value 1001 chars', base({ custom_metadata: { k: long(1001) } }), ['body', 'custom_metadata', 'k'], 'at most 1000 characters'],
  ['custom_metadata object value', base({ customMetadata: { k: { a: 1 } } }), ['body', 'customMetadata', 'k'], 'value is not a valid string, number or boolean'],
  ['custom_metadata key 257 chars', base({ custom_metadata: { [long(257)]: 1 } }), ['body', 'custom_metadata', long(257)], '1 to 256 characters'],
  ['custom_metadata empty key', base({ custom_metadata: { '': 1 } }), ['body', 'custom_metadata', ''], '1 to 256 characters'],
  ['images not an array', base({ images: {} }), ['body', 'images'], 'not a valid array'],
  ['101 images', base({ images: Array.from({ length: 101 }, () => ({})) }), ['body', 'images'], 'at most 100 items'],
  ['detection x a string', base(image({ objectDetections: [{ ...detection, x: '10', tracker_id: 4 }] })), ['body', 'images', 0, 'objectDetections', 0, 'x'], 'not a valid number'],
  ['keypoint occluded not a boolean', base(image({ keypoints: [{ ...detection, keypoints: [{ id: 0, x: 1, y: 2, occluded: 'no' }] }] })), ['body', 'images', 0, 'keypoints', 0, 'keypoints', 0, 'occluded'], 'not a valid boolean'],
  ['image label too long', base(image({ label: long(257) })), ['body', 'images', 0, 'label'], 'at most 256'],
  ['confidence 1.5', base(image({ objectDetections: [{ ...detection, confidence: 1.5 }] })), ['body', 'images', 0, 'objectDetections', 0, 'confidence'], 'less than or equal to 1'],
  ['confidence -0.1', base(image({ classifications: [{ class: 'a', confidence: -0.1 }] })), ['body', 'images', 0, 'classifications', 0, 'confidence'], 'greater than or equal to 0'],
  ['detection without class', base(image({ object_detections: [{ ...detection, class: undefined }] })), ['body', 'images', 0, 'object_detections', 0, 'class'], 'field required'],
  ['segmentation points not numbers', base(image({ instance_segmentations: [{ ...detection, points: [['a']] }] })), ['body', 'images', 0, 'instance_segmentations', 0, 'points', 0, 0], 'not a valid number'],
  ['keypoint id not an integer', base(image({ keypoints: [{ ...detection, keypoints: [{ id: 1.5, x: 1, y: 2, occluded: false }] }] })), ['body', 'images', 0, 'keypoints', 0, 'keypoints', 0, 'id'], 'not a valid integer'],
  ['image metadata not boolean', base(image({ metadata: { blurry: 'yes' } })), ['body', 'images', 0, 'metadata', 'blurry'], 'not a valid boolean'],
  ['display_image_position negative', base({ display_image_position: -1, images: [{}] }), ['body', 'display_image_position'], 'greater than or equal to 0'],
  ['display_image_position not an integer', base({ displayImagePosition: 0.5, images: [{}] }), ['body', 'displayImagePosition'], 'not a valid integer'],
  ['display_image_position beyond images', base({ display_image_position: 2, images: [{}, {}] }), ['body', 'display_image_position'], 'out of range'],
  ['displayImagePosition without images', base({ displayImagePosition: 0 }), ['body', 'displayImagePosition'], 'out of range'],
];

t.test('422 validation_failed: a body with one problem gets one FastAPI issue', async (t) => {
  for (const [name, body, loc, msg] of invalid422) {
    const err = rejection(body);
    t.equal(err.code, 'validation_failed', `${name}: code`);
    t.equal(err.status, 422, `${name}: status`);
    t.ok(Array.isArray(err.detail) && err.detail.length === 1, `${name}: one issue`);
    const [issue] = err.detail as { loc: unknown[]; msg: string; type: string }[];
    t.same(issue.loc, loc, `${name}: loc`);
    t.match(issue.msg, msg, `${name}: msg`);
    t.type(issue.type, 'string', `${name}: type`);
  }
});

t.test('422 names every problem of a body in one answer, each field once in either spelling', async (t) => {
  const err = rejection({ eventSchema: 'custom', customMetadata: { k: { a: 1 } }, images: [{ objectDetections: [{ class: 'cat', x: 1, y: 1, width: 1, height: 1 }] }] });
  t.equal(err.code, 'validation_failed');
  t.same((err.detail as { loc: unknown[] }[]).map((issue) => issue.loc), [
    ['body', 'inference_timestamp'],
    ['body', 'event_data'],
    ['body', 'customMetadata', 'k'],
    ['body', 'images', 0, 'objectDetections', 0, 'confidence'],
  ], 'the missing fields, a bad value and a bad detection, each once');
  const unknown = rejection({ inference_timestamp: 'yesterday', event_schema: 'vision_event', event_data: {} });
  t.equal(unknown.code, 'unknown_event_schema');
  t.same((unknown.detail as { loc: unknown[]; type: string }[]).map((issue) => [issue.loc, issue.type]),
    [[['body', 'event_schema'], 'enum'], [['body', 'inference_timestamp'], 'value_error.datetime']], 'the unknown schema first, then the rest');
});

t.test('unknown event_schema: 422 unknown_event_schema (E4)', async (t) => {
  for (const key of ['event_schema', 'eventSchema']) {
    const body: Body = { inference_timestamp: TS, [key]: 'vision_event', event_data: {} };
    const err = rejection(body);
    t.equal(err.code, 'unknown_event_schema');
    t.equal(err.status, 422);
    t.same(err.detail, [
      {
        loc: ['body', key],
        msg: "unknown event_schema 'vision_event'; expected one of quality_check, inventory_count, safety_alert, operator_feedback, custom",
        type: 'enum',
      },
    ]);
  }
});

// ---------------------------------------------------------------------------------------------
// 400 event_data does not conform (E2): each constraint of the schemas (docs/API.md, "Event schemas")

/** [schema, event_data, fragment of the detail after the schema name] */
const invalidEventData: [string, Body, string][] = [
  ['quality_check', {}, 'result is required'],
  ['quality_check', { result: 'maybe' }, 'result must be one of pass, fail'],
  ['quality_check', { result: 'pass', externalId: long(1001) }, 'externalId must have at most 1000 characters'],
  ['quality_check', { result: 'pass', external_id: 'a', externalId: 'a' }, 'give external_id or externalId, not both'],
  ['quality_check', { result: 'pass', score: 1 }, "unknown field 'score'"],
  ['inventory_count', { location: long(1001) }, 'location must have at most 1000 characters'],
  ['inventory_count', { itemCount: -1 }, 'itemCount must be 0 or greater'],
  ['inventory_count', { item_count: 1.5 }, 'item_count must be an integer'],
  ['inventory_count', { item_count: '3' }, 'item_count must be an integer'],
  ['inventory_count', { itemType: long(1001) }, 'itemType must have at most 1000 characters'],
  ['inventory_count', { external_id: long(1001) }, 'external_id must have at most 1000 characters'],
  ['safety_alert', { alertType: long(257) }, 'alertType must have at most 256 characters'],
  ['safety_alert', { alert_type: 'fire!' }, 'alert_type may contain only letters, digits, underscores, spaces and hyphens'],
  ['safety_alert', { severity: 'critical' }, 'severity must be one of low, medium, high'],
  ['safety_alert', { description: long(10001) }, 'description must have at most 10000 characters'],
  ['safety_alert', { externalId: long(1001) }, 'externalId must have at most 1000 characters'],
  ['safety_alert', { alert_type: 5 }, 'alert_type must be a string'],
  ['operator_feedback', { feedback: 'correct' }, 'related_event_id is required'],
  ['operator_feedback', { relatedEventId: 'e' }, 'feedback is required'],
  ['operator_feedback', { related_event_id: 'e', feedback: 'wrong' }, 'feedback must be one of correct, incorrect, inconclusive'],
  ['operator_feedback', { related_event_id: null, feedback: 'correct' }, 'related_event_id must be a string'],
  ['custom', { external_id: long(1001) }, 'external_id must have at most 1000 characters'],
  ['custom', { value: long(10001) }, 'value must have at most 10000 characters'],
  ['custom', { payload: {} }, "unknown field 'payload'"],
];

t.test('400 event_data_invalid with a string naming the schema (E2)', async (t) => {
  for (const [schema, data, fragment] of invalidEventData) {
    const err = rejection(base({ event_schema: schema, event_data: data }));
    t.equal(err.code, 'event_data_invalid', `${schema} ${fragment}: code`);
    t.equal(err.status, 400);
    t.type(err.detail, 'string');
    t.equal(err.detail, `event_data does not conform to schema '${schema}': ${fragment}`);
  }
  // limits themselves are accepted
  t.ok(validateCreateBody(base({ event_schema: 'safety_alert', event_data: { alertType: long(256), description: long(10000) } })));
  t.ok(validateCreateBody(base({ event_schema: 'inventory_count', event_data: { itemCount: 0, location: long(1000) } })));
});

t.test('400 event_data_invalid names every problem in one answer: the string detail (E2) and the same problems as issues', async (t) => {
  const err = rejection(base({ event_schema: 'inventory_count', event_data: { itemcount: 3, location: long(1001), itemType: 5, external_ld: 'x' } }));
  t.equal(err.code, 'event_data_invalid');
  t.equal(err.status, 400, 'the contract\'s status for E2');
  t.equal(err.detail, 'event_data does not conform to schema \'inventory_count\': '
    + 'unknown field \'itemcount\' (did you mean \'itemCount\'?); unknown field \'external_ld\' (did you mean \'external_id\'?); '
    + 'location must have at most 1000 characters; itemType must be a string');
  t.same(err.issues, [
    { loc: ['body', 'event_data', 'itemcount'], msg: 'unknown field \'itemcount\' (did you mean \'itemCount\'?)', type: 'value_error.extra' },
    { loc: ['body', 'event_data', 'external_ld'], msg: 'unknown field \'external_ld\' (did you mean \'external_id\'?)', type: 'value_error.extra' },
    { loc: ['body', 'event_data', 'location'], msg: 'location must have at most 1000 characters', type: 'value_error.any_str.max_length' },
    { loc: ['body', 'event_data', 'itemType'], msg: 'itemType must be a string', type: 'type_error.string' },
  ], 'the 422 issues\' shape, a did-you-mean spelt as the field is');
  t.same(responseProblems('error', { detail: err.detail, errors: err.issues }), []);

  const feedback = rejection({ inferenceTimestamp: TS, eventSchema: 'operator_feedback', eventData: {} });
  t.equal(feedback.detail, 'event_data does not conform to schema \'operator_feedback\': related_event_id is required; feedback is required');
  t.same(feedback.issues!.map((issue) => [issue.loc, issue.type]), [
    [['body', 'eventData', 'related_event_id'], 'value_error.missing'],
    [['body', 'eventData', 'feedback'], 'value_error.missing'],
  ], 'each required field once, whichever spelling, under the key the body used');
  t.same(rejection(base({ event_schema: 'custom', event_data: { colour: 'red' } })).issues,
    [{ loc: ['body', 'event_data', 'colour'], msg: 'unknown field \'colour\'', type: 'value_error.extra' }], 'no did-you-mean when none is close');
});

t.test('a number where the timestamp belongs says an ISO 8601 string is expected and shows one', async (t) => {
  const seconds = rejection(base({ inference_timestamp: 1733140800 }));
  t.equal(seconds.code, 'validation_failed');
  t.same(seconds.detail, [{
    loc: ['body', 'inference_timestamp'],
    msg: 'value is not a valid string: an ISO 8601 timestamp string is expected, such as "2024-12-02T12:00:00Z" (1733140800 read as seconds since the epoch)',
    type: 'type_error.string',
  }]);
  t.match((rejection({ inferenceTimestamp: 1733140800123, event_schema: 'custom', event_data: {} }).detail as { msg: string }[])[0].msg,
    'such as "2024-12-02T12:00:00.123Z" (1733140800123 read as milliseconds since the epoch)');
  t.match((rejection(base({ inference_timestamp: 42 })).detail as { msg: string }[])[0].msg, 'an ISO 8601 timestamp string is expected, such as "2026-12-02T10:00:00Z"');
  t.same((rejection(base({ inference_timestamp: '2025-02-30T00:00:00Z' })).detail as { msg: string }[]).map((issue) => issue.msg),
    ['invalid datetime format: an ISO 8601 timestamp string is expected, such as "2026-12-02T10:00:00Z"']);
});

// ---------------------------------------------------------------------------------------------
// Response schemas

const storedEvent = {
  id: '0b6f4c1e-8a57-4d1e-9f5e-2b9a3c7d1e20',
  solution: null,
  workflow_id: 'wf',
  workflow_version: null,
  inference_timestamp: TS,
  device_id: 'dev',
  stream_id: null,
  image_id: null,
  images: [{ file_id: 'f1', input_file_id: null, label: null, object_detections: [detection], classifications: [], instance_segmentations: [], keypoints: [], metadata: {} }],
  videos: [{ file_id: 'v1', label: 'video', content_type: 'video/mp4', size_bytes: 10 }],
  local_only_files: [],
  display_image_position: 0,
  event_schema: 'custom',
  event_data: {},
  custom_metadata: { a: 1 },
  created_at: '2025-01-31T12:00:00.123456Z',
  api_version: 'v2',
  original_file_count: 2,
  current_file_count: 2,
  draft: false,
  finalized_at: '2025-01-31T12:00:00.123456Z',
  auto_finalized_at: null,
};

t.test('response validators catch missing fields', async (t) => {
  t.same(responseProblems('stored-event', storedEvent), []);
  t.same(responseProblems('event-list', { events: [storedEvent], count: 1, next_timestamp: null }), []);
  const { draft: _draft, ...noDraft } = storedEvent;
  t.match(responseProblems('event-list', { events: [noDraft], count: 1, next_timestamp: null }), ["/events/0 must have required property 'draft'"]);
  t.same(responseProblems('reset-confirm', { status: 'ok' }), ["/ must have required property 'message'"]);
  t.notOk(responseValidator('stored-event')({ ...storedEvent, api_version: 'v1' }));
  t.notOk(responseValidator('create-response')({ id: 'x', image_ids: [], created_at: TS, draft: false, message: 'ok' }), 'id must be a uuid');
  t.ok(responseValidator('error')({ detail: 'Event not found' }));
  t.ok(responseValidator('error')({ detail: [{ loc: ['body', 'images', 0], msg: 'm', type: 't' }] }));
  t.ok(responseValidator('health')({ status: 'healthy', datastore: 'ok' }));
  t.notOk(responseValidator('count-stats')({ total_count: 1, filtered_count: 1, oldest_timestamp: null }));
});

// ---------------------------------------------------------------------------------------------
// OpenAPI

/** Every route of the server's table, as OpenAPI names it: [method, path]. */
const ROUTES = allRoutes.map((route) => [route.method, openApiPath(route.path)] as const);

t.test('OpenAPI document: one operation per route of the table, and nothing else', async (t) => {
  const doc = buildOpenApiDocument(allRoutes) as any;
  t.equal(doc.openapi, '3.1.0');
  t.equal(buildOpenApiDocument(allRoutes), doc, 'cached');
  t.same(JSON.parse(openApiJson(allRoutes)), doc, 'serialised');
  t.ok(ROUTES.length >= 25, `${ROUTES.length} routes`);
  for (const [method, path] of ROUTES) t.ok(doc.paths[path]?.[method], `${method.toUpperCase()} ${path}`);
  const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item as object).map((method) => `${method} ${path}`));
  t.same(operations.sort(), ROUTES.map(([method, path]) => `${method} ${path}`).sort(), 'no operation without a route');
  const operationIds = ROUTES.map(([method, path]) => doc.paths[path]?.[method]?.operationId);
  t.equal(new Set(operationIds).size, ROUTES.length, 'operationIds unique');
  t.match(doc.components.securitySchemes.ApiKey, { type: 'apiKey', in: 'header', name: 'X-API-Key' });
  for (const route of allRoutes.filter((r) => r.public)) {
    t.same(doc.paths[openApiPath(route.path)][route.method].security, [], `${route.path} needs no key`);
  }
  t.ok(doc.paths['/v2/events'].post.responses['201']);
  for (const status of ['400', '401', '413', '415', '422', '500', '507', '529']) t.ok(doc.paths['/v2/events'].post.responses[status], `create ${status}`);
  t.ok(doc.paths['/v2/events/{event_id}/videos'].post.responses['409']);
  t.ok(doc.paths['/v2/events/{event_id}/videos'].post.responses['415']);
  t.match(doc.paths['/images/{image_id}'].get.responses['416'], { headers: { 'Content-Range': {} } });
  t.notOk(doc.paths['/v2/events/{event_id}/finalize'].post.responses['529'], 'finalize is not gated');
  const listParams = doc.paths['/v2/events'].get.parameters.map((p: { name: string }) => p.name);
  for (const name of ['limit', 'device_id', 'event_schema', 'workflow_id', 'external_id', 'related_event_id', 'device_ids', 'event_schemas', 'workflow_ids', 'external_ids', 'start_time', 'end_time', 'include_drafts', 'sort_direction', 'metadata_filter']) {
    t.ok(listParams.includes(name), `GET /v2/events ?${name}`);
  }
  for (const [method, path] of ROUTES) {
    const named = (doc.paths[path][method].parameters ?? []).filter((p: { in: string }) => p.in === 'path').map((p: { name: string }) => p.name);
    t.same(named, [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]), `${method.toUpperCase()} ${path}: its path parameters`);
  }
  const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
  t.ok(refs.length > 50, 'refs found');
  t.same(refs.filter((r) => !/^"\$ref":"#\/components\/schemas\/[A-Za-z]+/.test(r)), [], 'every $ref points into components.schemas');
  const targets = new Set(refs.map((r) => /#\/components\/schemas\/([A-Za-z]+)/.exec(r)![1]));
  t.same([...targets].filter((name) => !doc.components.schemas[name]), [], 'and names a component that exists');
});

t.test('OpenAPI component schemas compile with ajv and agree with the validator', async (t) => {
  const doc = buildOpenApiDocument(allRoutes) as any;
  const ajv = new Ajv2020({ strict: false, allowUnionTypes: true });
  addFormatsPlugin.default(ajv);
  ajv.addSchema({ $id: 'https://openapi.test/doc.json', components: doc.components });
  const names = Object.keys(doc.components.schemas);
  for (const n of ['CreateEvent', 'Detection', 'ImageEntry', 'EventDataQualityCheck', ...RESPONSE_SCHEMA_NAMES.map((r) => r.replace(/(^|-)(\w)/g, (_, __, c: string) => c.toUpperCase()))]) {
    t.ok(names.includes(n), `component ${n}`);
  }
  const compile = (name: string) => ajv.compile({ $ref: `https://openapi.test/doc.json#/components/schemas/${name}` });
  for (const name of names) t.doesNotThrow(() => compile(name), `compiles ${name}`);

  const create = compile('CreateEvent');
  t.ok(create(base({ workflowId: 'w', images: [{ objectDetections: [detection] }] })), 'valid body passes');
  t.notOk(create(base({ workflow_id: 'a', workflowId: 'b' })), 'both spellings fail');
  t.notOk(create(base(image({ objectDetections: [{ ...detection, confidence: 1.5 }] }))), 'confidence 1.5 fails');
  t.notOk(compile('EventDataSafetyAlert')({ alertType: 'a!' }), 'event_data schema kept');
  t.ok(compile('StoredEvent')(storedEvent), 'stored event passes');
  t.notOk(compile('EventList')({ events: [{ ...storedEvent, images: [{}] }], count: 1, next_timestamp: null }), 'nested refs resolve');
});
