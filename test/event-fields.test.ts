/**
 * One field list (#30 item 4): the event's fields are written in several places, and this file
 * pins every copy to the JSON Schemas, the contract (docs/API.md, "Response shapes": the stored
 * event is `schemas/responses/stored-event.json`; the create body is `schemas/create-event.json`).
 * Adding a field in one place only fails here, with a message naming the place and the field.
 *
 * How each copy is pinned:
 * - TypeScript interfaces (src/events/types.ts: StoredEvent, StoredImage, StoredAttachment,
 *   CreateEventInput, ImageInput; src/store/record/event-record.ts: EventRecord, RecordImage,
 *   RecordAttachment; src/store/engine/event-store.ts: NewEvent['fields']) at compile time. The schemas
 *   are imported as JSON modules, so TypeScript knows their property names as literal types
 *   (`keyof typeof storedEventSchema.properties`). `NoDrift<Exclude<A, B>>` compiles only when
 *   the difference is empty; otherwise `tsc -p tsconfig.test.json` reports
 *   `Type '"zone_id"' does not satisfy the constraint 'never'` on the line naming the copy.
 *   The object literals built from these interfaces (event-store.ts `prepare`, present.ts,
 *   record-codec.ts `decodeLayout2`/`decodeLayout1`, validate.ts's defaults) are then held to
 *   them by TypeScript's own missing and excess property checks.
 * - The copies that are positional or name-driven, by behaviour at run time: validate.ts (each
 *   schema field is kept, an unknown key dropped, a wrong type answered 422 naming the field),
 *   the stored record (`store.getEvent`) and the presented JSON the GET route answers
 *   (`store.getEventJson`) of a real event created with every field set, and the record-codec
 *   round trip (layout 2 is a positional array `encodeLayout2` writes by hand).
 * - docs/API.md's "Response shapes" row of the stored event, by reading the row.
 */
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import createEventSchema from '../schemas/create-event.json' with { type: 'json' };
import storedEventSchema from '../schemas/responses/stored-event.json' with { type: 'json' };
import { AppError } from '../src/errors.js';
import { presentEventJson } from '../src/events/present.js';
import type { CreateEventInput, ImageInput, StoredAttachment, StoredEvent, StoredImage } from '../src/events/types.js';
import { validateCreateBody } from '../src/events/validate.js';
import { packageRoot } from '../src/paths.js';
import type { EventRecord, RecordAttachment, RecordImage } from '../src/store/record/event-record.js';
import type { NewEvent } from '../src/store/engine/prepared-create.js';
import { decodeRecord, encodeRecord, storedJson } from '../src/store/index/record-codec.js';
import { fixture } from './support/events.js';
import { openLocalStore } from './support/local-store.js';

// ---------------------------------------------------------------------------------------------
// Compile time: the interfaces against the schemas' property names

/** The snake_case names of a schema's properties (the camelCase twins are `$ref`s to them). */
type SnakeKeys<T> = { [K in keyof T]: K extends Lowercase<K & string> ? K : never }[keyof T];

type StoredEventField = keyof typeof storedEventSchema.properties;
type StoredImageField = keyof typeof storedEventSchema.$defs.storedImage.properties;
type AttachmentField = keyof typeof storedEventSchema.$defs.attachment.properties;
type CreateField = SnakeKeys<typeof createEventSchema.properties>;
type ImageEntryField = SnakeKeys<typeof createEventSchema.$defs.imageEntry.properties>;

/** The one stored-event field the presenter adds: the record does not keep it. */
const PRESENTED_ONLY = ['api_version'] as const;
type PresentedOnly = (typeof PRESENTED_ONLY)[number];
/** The create fields the store does not take as given: images are decoded into files first. */
type DecodedByCreate = 'images';

/** Compiles only when T is `never`; tsc's error names the members of T, the drifted fields. */
type NoDrift<T extends never> = T;

/** Each line: fields of the named copy missing from the schema, then the reverse. */
export type InterfaceDrift = [
  NoDrift<Exclude<keyof StoredEvent, StoredEventField>>, // types.ts StoredEvent vs stored-event.json
  NoDrift<Exclude<StoredEventField, keyof StoredEvent>>,
  NoDrift<Exclude<keyof StoredImage, StoredImageField>>, // types.ts StoredImage vs stored-event.json $defs.storedImage
  NoDrift<Exclude<StoredImageField, keyof StoredImage>>,
  NoDrift<Exclude<keyof StoredAttachment, AttachmentField>>, // types.ts StoredAttachment vs $defs.attachment
  NoDrift<Exclude<AttachmentField, keyof StoredAttachment>>,
  NoDrift<Exclude<keyof CreateEventInput, CreateField>>, // types.ts CreateEventInput vs create-event.json
  NoDrift<Exclude<CreateField, keyof CreateEventInput>>,
  NoDrift<Exclude<keyof ImageInput, ImageEntryField>>, // types.ts ImageInput vs create-event.json $defs.imageEntry
  NoDrift<Exclude<ImageEntryField, keyof ImageInput>>,
  NoDrift<Exclude<keyof EventRecord, Exclude<StoredEventField, PresentedOnly>>>, // event-record.ts EventRecord vs stored-event.json
  NoDrift<Exclude<Exclude<StoredEventField, PresentedOnly>, keyof EventRecord>>,
  NoDrift<Exclude<keyof RecordImage, StoredImageField>>, // event-record.ts RecordImage vs $defs.storedImage
  NoDrift<Exclude<StoredImageField, keyof RecordImage>>,
  NoDrift<Exclude<keyof RecordAttachment, AttachmentField>>, // event-record.ts RecordAttachment vs $defs.attachment
  NoDrift<Exclude<AttachmentField, keyof RecordAttachment>>,
  NoDrift<Exclude<keyof NewEvent['fields'], Exclude<CreateField, DecodedByCreate>>>, // event-store.ts NewEvent['fields'] vs create-event.json
  NoDrift<Exclude<Exclude<CreateField, DecodedByCreate>, keyof NewEvent['fields']>>,
];

// ---------------------------------------------------------------------------------------------
// Run time: the field lists, read from the same JSON

type Schema = { type?: string | string[]; $ref?: string; properties?: Record<string, Schema> };
const createProps = createEventSchema.properties as Record<string, Schema>;
const imageEntryProps = createEventSchema.$defs.imageEntry.properties as Record<string, Schema>;

const isSnake = (name: string): boolean => name === name.toLowerCase();
const toCamel = (name: string): string => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

const STORED_FIELDS = Object.keys(storedEventSchema.properties);
const STORED_IMAGE_FIELDS = Object.keys(storedEventSchema.$defs.storedImage.properties);
const ATTACHMENT_FIELDS = Object.keys(storedEventSchema.$defs.attachment.properties);
const CREATE_FIELDS = Object.keys(createProps).filter(isSnake);
const IMAGE_ENTRY_FIELDS = Object.keys(imageEntryProps).filter(isSnake);
const RECORD_FIELDS = STORED_FIELDS.filter((f) => !(PRESENTED_ONLY as readonly string[]).includes(f));
/** Image payloads a create decodes into stored files: the entry field and the stored id it becomes. */
const PAYLOAD_TO_FILE_ID: Record<string, string> = { base64_image: 'file_id', input_base64_image: 'input_file_id' };

const STORED = 'schemas/responses/stored-event.json';
const CREATE = 'schemas/create-event.json';

/**
 * Asserts that `copy` has exactly the fields of `contract`, naming each field one side lacks.
 * @param where the copy, e.g. "store.getEvent (src/store/engine/event-store.ts prepare)"
 */
function sameFields(t: Test, copy: string[], contract: string[], where: string, schema: string): void {
  const extra = copy.filter((f) => !contract.includes(f));
  const missing = contract.filter((f) => !copy.includes(f));
  t.same(extra, [], `${where}: fields not in ${schema}: ${extra.join(', ') || 'none'}`);
  t.same(missing, [], `${where}: fields of ${schema} it lacks: ${missing.join(', ') || 'none'}`);
}

/** The schema a property's `$ref` (local to `root`) points at, or the property itself. */
function resolved(root: any, prop: Schema): Schema {
  if (!prop.$ref?.startsWith('#/')) return prop;
  return resolved(root, prop.$ref.slice(2).split('/').reduce((node: any, key) => node[key], root));
}

/** A JSON value that a property of types `types` does not accept. */
function wrongTypeFor(types: string[]): unknown {
  const candidates: [string[], unknown][] = [[['boolean'], true], [['string'], 'text'], [['array'], []], [['object'], {}], [['number', 'integer'], 1.5]];
  return candidates.find(([kinds]) => !kinds.some((k) => types.includes(k)))![1];
}

/** A create body in snake_case with every field of create-event.json set (and the image's). */
function fullBody(): Record<string, any> {
  const box = { x: 10, y: 20, width: 30, height: 40, confidence: 0.9 };
  return {
    solution: 'line-qa',
    workflow_id: 'wf-1',
    workflow_version: '7',
    inference_timestamp: '2026-11-22T01:00:00.5Z',
    device_id: 'cam-1',
    stream_id: 'rtsp-main',
    image_id: 'frame-42',
    event_schema: 'quality_check',
    event_data: { result: 'fail', external_id: 'lot-9' },
    custom_metadata: { line: 'B', batch: 7, ok: true },
    images: [{
      label: 'front',
      base64_image: fixture('cat.jpg').toString('base64'),
      input_base64_image: fixture('camera.jpg').toString('base64'),
      object_detections: [{ class: 'cat', ...box }],
      classifications: [{ class: 'cat', confidence: 0.97 }],
      instance_segmentations: [{ class: 'cat', ...box, points: [[10, 20], [30, 20], [30, 40]] }],
      keypoints: [{ class: 'cat', ...box, keypoints: [{ id: 0, x: 12, y: 22, occluded: false }] }],
      metadata: { reviewed: true },
    }],
    display_image_position: 0,
    draft: true,
  };
}

/** The same body with every field in its camelCase spelling, at every level outside event_data. */
function camelBody(body: Record<string, any>): Record<string, any> {
  const camel = (o: Record<string, any>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [toCamel(k), v]));
  return { ...camel(body), images: body.images.map(camel) };
}

// ---------------------------------------------------------------------------------------------

t.test('the schemas agree with themselves and with each other', async (t) => {
  // docs/API.md, "Response shapes": every field listed is always present.
  sameFields(t, storedEventSchema.required, STORED_FIELDS, `${STORED} required`, `${STORED} properties`);
  sameFields(t, storedEventSchema.$defs.storedImage.required, STORED_IMAGE_FIELDS, `${STORED} $defs.storedImage required`, 'its properties');
  sameFields(t, storedEventSchema.$defs.attachment.required, ATTACHMENT_FIELDS, `${STORED} $defs.attachment required`, 'its properties');

  // Every field a create takes is answered; image payloads come back as the ids of their files.
  const notAnswered = CREATE_FIELDS.filter((f) => !STORED_FIELDS.includes(f));
  t.same(notAnswered, [], `${CREATE} fields missing from ${STORED}: ${notAnswered.join(', ') || 'none'}`);
  const entryAsStored = IMAGE_ENTRY_FIELDS.map((f) => PAYLOAD_TO_FILE_ID[f] ?? f);
  sameFields(t, entryAsStored, STORED_IMAGE_FIELDS, `${CREATE} $defs.imageEntry (payloads as file ids)`, `${STORED} $defs.storedImage`);

  // validate.ts maps each spelling to snake_case from `properties`: each camelCase name is a
  // `$ref` to its snake_case twin, and each field with two spellings refuses both at once.
  for (const [props, deps, where] of [
    [createProps, createEventSchema.dependentSchemas, CREATE],
    [imageEntryProps, createEventSchema.$defs.imageEntry.dependentSchemas, `${CREATE} $defs.imageEntry`],
  ] as [Record<string, Schema>, Record<string, unknown>, string][]) {
    const base = where === CREATE ? '#/properties/' : '#/$defs/imageEntry/properties/';
    for (const name of Object.keys(props).filter((n) => !isSnake(n))) {
      const snake = name.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
      t.equal(props[name].$ref, base + snake, `${where}: ${name} is a $ref to ${snake}`);
    }
    const twoSpellings = Object.keys(props).filter((n) => isSnake(n) && n.includes('_'));
    sameFields(t, twoSpellings.map(toCamel).filter((c) => c in props).map((c) => c.replace(/[A-Z]/g, (x) => '_' + x.toLowerCase())), twoSpellings, `${where} camelCase twins`, 'its snake_case fields');
    sameFields(t, Object.keys(deps), twoSpellings, `${where} dependentSchemas`, 'its snake_case fields with two spellings');
  }
});

t.test('docs/API.md lists the stored event with the schema\'s fields', async (t) => {
  const api = fs.readFileSync(path.join(packageRoot, 'docs', 'API.md'), 'utf8');
  const row = api.split('\n').find((line) => line.startsWith('| stored event'));
  t.ok(row, 'docs/API.md, "Response shapes", has a stored event row');
  const named = [...new Set([...(row ?? '').matchAll(/`([a-z_0-9]+)`/g)].map((m) => m[1]))].filter((n) => n !== 'v2');
  const all = [...new Set([...STORED_FIELDS, ...STORED_IMAGE_FIELDS, ...ATTACHMENT_FIELDS])];
  sameFields(t, named, all, 'docs/API.md "Response shapes" stored event row', STORED);
});

t.test('validate.ts keeps every create field, drops unknown ones and type-checks each', async (t) => {
  const body = fullBody();
  sameFields(t, Object.keys(body), CREATE_FIELDS, 'this test\'s fullBody', CREATE);
  sameFields(t, Object.keys(body.images[0]), IMAGE_ENTRY_FIELDS, 'this test\'s fullBody image', `${CREATE} $defs.imageEntry`);
  const input = validateCreateBody({ ...fullBody(), zz_unknown: 1, images: [{ ...body.images[0], zz_unknown: 1 }] });
  sameFields(t, Object.keys(input), CREATE_FIELDS, 'validateCreateBody result (src/events/validate.ts)', CREATE);
  sameFields(t, Object.keys(input.images[0]), IMAGE_ENTRY_FIELDS, 'validateCreateBody image (src/events/validate.ts)', `${CREATE} $defs.imageEntry`);
  for (const field of CREATE_FIELDS.filter((f) => f !== 'images' && f !== 'event_data')) {
    t.same((input as any)[field], body[field], `validate.ts keeps ${field} as sent`);
  }
  t.same(validateCreateBody(camelBody(fullBody())), input, 'the camelCase spellings normalise to the same input');

  const refused = (raw: unknown): AppError | undefined => {
    try {
      validateCreateBody(raw);
    } catch (err) {
      if (err instanceof AppError) return err;
      throw err;
    }
    return undefined;
  };
  for (const [props, where] of [[createProps, CREATE], [imageEntryProps, `${CREATE} $defs.imageEntry`]] as const) {
    for (const name of Object.keys(props)) {
      const types = [resolved(createEventSchema, props[name]).type ?? []].flat();
      t.ok(types.length > 0, `${where}: ${name} declares a type`);
      const wrong = wrongTypeFor(types);
      const raw = fullBody();
      const atTop = where === CREATE;
      const target = atTop ? raw : raw.images[0];
      const snake = name.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
      delete target[snake];
      target[name] = wrong;
      const err = refused(raw);
      const loc = atTop ? ['body', name] : ['body', 'images', 0, name];
      t.same(err && [err.status, err.code, (err.detail as any)[0].loc, (err.detail as any)[0].type.startsWith('type_error')],
        [422, 'validation_failed', loc, true], `validate.ts type-checks ${where} ${name}: ${JSON.stringify(wrong)} answers 422 naming it`);
    }
  }
});

t.test('a stored event has the schema\'s fields in its record, its GET answer and its codec round trip', async (t) => {
  const local = await openLocalStore();
  t.teardown(() => local.close());
  const body = fullBody();
  const { id } = await local.create(body);

  const record = local.store.getEvent(id)!;
  sameFields(t, Object.keys(record), RECORD_FIELDS, 'store.getEvent record (src/store/engine/event-store.ts prepare)', `${STORED} without ${PRESENTED_ONLY.join(', ')}`);
  sameFields(t, Object.keys(record.images[0]), STORED_IMAGE_FIELDS, 'store.getEvent image (event-store.ts prepare)', `${STORED} $defs.storedImage`);

  const answered = JSON.parse(local.store.getEventJson(id)!.toString('utf8'));
  sameFields(t, Object.keys(answered), STORED_FIELDS, 'GET /v2/events/{id} answer (src/events/present.ts via record-codec.ts)', STORED);
  sameFields(t, Object.keys(answered.images[0]), STORED_IMAGE_FIELDS, 'GET answer image (present.ts)', `${STORED} $defs.storedImage`);
  const input = validateCreateBody(fullBody());
  for (const field of CREATE_FIELDS.filter((f) => f !== 'images')) {
    t.same(answered[field], (input as any)[field], `${field} is stored and answered as the create gave it (event-store.ts prepare, present.ts)`);
  }
  for (const field of IMAGE_ENTRY_FIELDS.filter((f) => !(f in PAYLOAD_TO_FILE_ID))) {
    t.same(answered.images[0][field], (input.images[0] as any)[field], `image ${field} is stored and answered as the create gave it`);
  }
  for (const [payload, fileId] of Object.entries(PAYLOAD_TO_FILE_ID)) {
    t.type(answered.images[0][fileId], 'string', `image ${payload} is stored as a file, answered as ${fileId}`);
  }

  // Attachments come from multipart uploads; one of each, with every attachment field the schema names.
  const attachment = (n: number) => Object.fromEntries(ATTACHMENT_FIELDS.map((f) => {
    const type = [(storedEventSchema.$defs.attachment.properties as Record<string, Schema>)[f].type].flat()[0];
    return [f, type === 'integer' ? 100 + n : `${f}-${n}`];
  })) as unknown as RecordAttachment;
  const full: EventRecord = { ...record, videos: [attachment(1)], local_only_files: [attachment(2)], finalized_at: record.created_at + 1, auto_finalized_at: record.created_at + 2 };
  const value = encodeRecord(full, presentEventJson);
  const decoded = decodeRecord(value);
  t.same(decoded, full, 'record-codec.ts encodeRecord/decodeRecord keep every field (layout 2 is positional)');
  sameFields(t, Object.keys(decoded), RECORD_FIELDS, 'decodeRecord (src/store/index/record-codec.ts)', `${STORED} without ${PRESENTED_ONLY.join(', ')}`);
  sameFields(t, Object.keys(decoded.images[0]), STORED_IMAGE_FIELDS, 'decodeRecord image (record-codec.ts)', `${STORED} $defs.storedImage`);
  sameFields(t, Object.keys(decoded.videos[0]), ATTACHMENT_FIELDS, 'decodeRecord video (record-codec.ts)', `${STORED} $defs.attachment`);
  sameFields(t, Object.keys(decoded.local_only_files[0]), ATTACHMENT_FIELDS, 'decodeRecord local-only file (record-codec.ts)', `${STORED} $defs.attachment`);
  const presented = JSON.parse(storedJson(value, presentEventJson).toString('utf8'));
  sameFields(t, Object.keys(presented), STORED_FIELDS, 'storedJson (record-codec.ts layout 3, present.ts)', STORED);
  sameFields(t, Object.keys(presented.videos[0]), ATTACHMENT_FIELDS, 'storedJson video (present.ts)', `${STORED} $defs.attachment`);
  sameFields(t, Object.keys(presented.local_only_files[0]), ATTACHMENT_FIELDS, 'storedJson local-only file (present.ts)', `${STORED} $defs.attachment`);
});
