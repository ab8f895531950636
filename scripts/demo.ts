/**
 * `npm run demo`: a device pipeline's day in miniature, against a running store.
 *
 * Posts a stream of events from several cameras (real JPEGs from test/fixtures with object
 * detections, classifications, instance segmentations and keypoint groups; every event_schema;
 * custom_metadata with strings, numbers and booleans), then operator feedback on some of them, then
 * queries everything back with every list filter (docs/API.md, "Query parameters"), pages through
 * it, reads the count statistics and the latest events, and downloads an image whole and with a
 * Range, checking the bytes against the fixture; posts a keypoint event as real producers send it
 * (no `occluded`, extra model keys, wrapped base64) and, when SEARCH_WORKSPACE is set, searches the
 * hosted API through the store's gateway with the project's own CLI. Exits 1 as soon as the store
 * answers something unexpected.
 *
 * Settings: STORE_URL (default http://127.0.0.1:8001), API_KEY (sent as X-API-Key when set, and
 * as the CLI's key to the gateway), SEARCH_WORKSPACE (the gateway step; off when unset).
 * Every event carries `custom_metadata.demo_run`, so the checks see only this run's events.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../src/paths.js';
import { Random } from './lib/random.js';

const STORE_URL = (process.env.STORE_URL ?? 'http://127.0.0.1:8001').replace(/\/+$/, '');
const API_KEY = process.env.API_KEY;
const RUN = randomUUID().slice(0, 8);
const ROUNDS = 10; // each round, every camera posts one event at the same moment
const FEEDBACK_EVENTS = 8;

// ---------------------------------------------------------------------------------------------
// HTTP

class DemoFailure extends Error {}

interface Answer {
  status: number;
  headers: Headers;
  bytes: Buffer;
  ms: number;
}

async function call(method: string, route: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const started = performance.now();
  const response = await fetch(STORE_URL + route, {
    method,
    headers: {
      ...(API_KEY ? { 'X-API-Key': API_KEY } : {}),
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  return { status: response.status, headers: response.headers, bytes, ms: performance.now() - started };
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new DemoFailure(message);
}

/** Sends a request, insists on `status`, and returns the parsed JSON body with the timing. */
async function callJson<T>(method: string, route: string, status: number, body?: unknown): Promise<{ json: T; ms: number }> {
  const answer = await call(method, route, body);
  const text = answer.bytes.toString('utf8');
  check(answer.status === status, `${method} ${route} answered ${answer.status} (expected ${status}): ${text.slice(0, 300)}`);
  return { json: JSON.parse(text) as T, ms: answer.ms };
}

// ---------------------------------------------------------------------------------------------
// Media and synthetic model output

interface Fixture {
  name: string;
  bytes: Buffer;
  base64: string;
  width: number;
  height: number;
}

/** Width and height from a JPEG's start-of-frame marker. */
function jpegSize(bytes: Buffer): { width: number; height: number } {
  for (let at = 2; at + 9 < bytes.length; at += 2 + bytes.readUInt16BE(at + 2)) {
    const marker = bytes[at + 1];
    if (bytes[at] === 0xff && marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
      return { height: bytes.readUInt16BE(at + 5), width: bytes.readUInt16BE(at + 7) };
    }
  }
  throw new Error('no JPEG start-of-frame marker');
}

function loadFixture(name: string): Fixture {
  const bytes = fs.readFileSync(path.join(packageRoot, 'test', 'fixtures', name));
  return { name, bytes, base64: bytes.toString('base64'), ...jpegSize(bytes) };
}

/** Deterministic pseudo-random numbers, so every run posts the same stream. */
const rng = new Random(8001);
const random = (): number => rng.next();
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
const round = (value: number, digits = 1): number => Number(value.toFixed(digits));

/** A box inside the image: centre and full size in absolute pixels. */
function detection(image: Fixture, cls: string) {
  const width = round(image.width * (0.1 + random() * 0.3));
  const height = round(image.height * (0.1 + random() * 0.3));
  const x = round(width / 2 + random() * (image.width - width));
  const y = round(height / 2 + random() * (image.height - height));
  return { class: cls, x, y, width, height, confidence: round(0.5 + random() * 0.49, 3) };
}

/** A detection with a polygon of `corners` points on the ellipse inscribed in its box. */
function segmentation(image: Fixture, cls: string, corners = 8) {
  const box = detection(image, cls);
  const points = Array.from({ length: corners }, (_, i) => {
    const angle = (2 * Math.PI * i) / corners;
    return [round(box.x + (box.width / 2) * Math.cos(angle)), round(box.y + (box.height / 2) * Math.sin(angle))];
  });
  return { ...box, points };
}

const POSE = ['nose', 'left_eye', 'right_eye', 'left_shoulder', 'right_shoulder', 'left_hip', 'right_hip'];

/** A person box with a keypoint per POSE joint, some occluded. */
function pose(image: Fixture) {
  const box = detection(image, 'person');
  const keypoints = POSE.map((_, id) => ({
    id,
    x: round(box.x - box.width / 2 + random() * box.width),
    y: round(box.y - box.height / 2 + ((id + 1) / (POSE.length + 1)) * box.height),
    occluded: random() < 0.15,
  }));
  return { ...box, keypoints };
}

// ---------------------------------------------------------------------------------------------
// The stream: five cameras, each with its workflow, and a QA tablet giving feedback

interface Camera {
  deviceId: string;
  workflowId: string;
  line: string;
  image: Fixture;
  /** event_schema, event_data and the image entry of one inference. */
  infer(image: Fixture, n: number): { schema: string; data: Record<string, unknown>; entry: Record<string, unknown> };
}

const cat = loadFixture('cat.jpg');
const camera = loadFixture('camera.jpg');
const rocket = loadFixture('rocket.jpg');
const retina = loadFixture('retina.jpg');

const CAMERAS: Camera[] = [
  {
    deviceId: 'cam-assembly-1', workflowId: 'assembly-inspection', line: 'A', image: rocket,
    infer: (image, n) => {
      const defects = random() < 0.3 ? [detection(image, 'scratch')] : [];
      return {
        schema: 'quality_check',
        data: { result: defects.length > 0 ? 'fail' : 'pass', externalId: `unit-A-${1000 + n}` },
        entry: {
          label: 'annotated',
          objectDetections: [detection(image, 'fuselage'), detection(image, 'gantry'), ...defects],
          instanceSegmentations: [segmentation(image, 'fuselage', 12)],
          classifications: [{ class: defects.length > 0 ? 'defective' : 'ok', confidence: round(0.8 + random() * 0.19, 3) }],
        },
      };
    },
  },
  {
    deviceId: 'cam-assembly-2', workflowId: 'assembly-inspection', line: 'B', image: rocket,
    infer: (image, n) => ({
      schema: 'quality_check',
      data: { result: random() < 0.2 ? 'fail' : 'pass', externalId: `unit-B-${2000 + n}` },
      entry: { label: 'annotated', objectDetections: [detection(image, 'fuselage'), detection(image, 'gantry')] },
    }),
  },
  {
    deviceId: 'cam-dock-1', workflowId: 'dock-inventory', line: 'dock', image: camera,
    infer: (image, n) => {
      const tripods = Array.from({ length: 1 + Math.floor(random() * 4) }, () => detection(image, 'tripod'));
      return {
        schema: 'inventory_count',
        data: { location: 'dock 1, bay 3', itemCount: tripods.length, itemType: 'tripod', externalId: `scan-${3000 + n}` },
        entry: { label: 'shelf', objectDetections: tripods },
      };
    },
  },
  {
    deviceId: 'cam-yard-1', workflowId: 'yard-safety', line: 'yard', image: cat,
    infer: (image, n) => {
      const intrusion = random() < 0.5;
      return {
        schema: 'safety_alert',
        data: intrusion
          ? { alertType: 'animal_in_zone', severity: 'medium', description: 'Cat inside the forklift lane', externalId: `yard-${n}` }
          : { alertType: 'person_no_vest', severity: 'high', description: 'Person without a hi-vis vest near the loading ramp' },
        entry: {
          label: 'zone-overlay',
          objectDetections: [detection(image, intrusion ? 'cat' : 'person')],
          keypoints: intrusion ? [] : [pose(image)],
          instanceSegmentations: [segmentation(image, 'forklift_lane', 6)],
          metadata: { night_mode: random() < 0.5, ir_illuminator: false },
        },
      };
    },
  },
  {
    deviceId: 'cam-lab-1', workflowId: 'retina-screening', line: 'lab', image: retina,
    infer: (image, n) => ({
      schema: 'custom',
      data: { externalId: `patient-${4000 + n}`, value: pick(['no_dr', 'mild_npdr', 'moderate_npdr']) },
      entry: {
        label: 'fundus',
        classifications: [
          { class: 'no_dr', confidence: round(random() * 0.6, 3) },
          { class: 'mild_npdr', confidence: round(random() * 0.3, 3) },
        ],
        instanceSegmentations: [segmentation(image, 'optic_disc', 16)],
      },
    }),
  },
];

interface Posted {
  id: string;
  created_at: string;
  device_id: string;
  schema: string;
  metadata: Record<string, string | number | boolean>;
  image?: { fileId: string; fixture: Fixture };
}

interface CreateResponse {
  id: string;
  image_ids: string[];
  created_at: string;
  draft: boolean;
}

/** Builds one camera event at `moment` (the inference time) as a device pipeline sends it. */
function cameraEvent(cam: Camera, n: number, moment: Date) {
  const { schema, data, entry } = cam.infer(cam.image, n);
  const metadata = {
    demo_run: RUN,
    line: cam.line,
    shift: moment.getUTCHours() < 14 ? 'day' : 'night',
    temperature_c: round(18 + random() * 20),
    conveyor_speed_mps: round(0.2 + random() * 1.3, 2),
    door_open: random() < 0.25,
  };
  const body = {
    solution: 'edge-demo',
    workflow_id: cam.workflowId,
    workflow_version: '3',
    inference_timestamp: moment.toISOString(),
    device_id: cam.deviceId,
    stream_id: `${cam.deviceId}/main`,
    event_schema: schema,
    event_data: data,
    custom_metadata: metadata,
    images: [{ ...entry, base64Image: cam.image.base64 }],
    displayImagePosition: 0,
  };
  return { body, metadata, schema };
}

async function post(body: Record<string, unknown>, metadata: Posted['metadata'], schema: string, latencies: number[], fixture?: Fixture): Promise<Posted> {
  const { json, ms } = await callJson<CreateResponse>('POST', '/v2/events', 201, body);
  latencies.push(ms);
  check(json.draft === false, `event ${json.id} came back as a draft`);
  const image = fixture ? { fileId: json.image_ids[0], fixture } : undefined;
  check(!fixture || json.image_ids.length === 1, `event ${json.id} has ${json.image_ids.length} image ids (expected 1)`);
  return { id: json.id, created_at: json.created_at, device_id: String(body.device_id), schema, metadata, image };
}

// ---------------------------------------------------------------------------------------------
// Steps

interface StoredEvent {
  id: string;
  device_id: string | null;
  event_schema: string;
  event_data: Record<string, unknown>;
  custom_metadata: Record<string, string | number | boolean>;
  created_at: string;
  api_version: string;
  images: { file_id: string | null; object_detections: unknown[]; instance_segmentations: unknown[]; keypoints: unknown[] }[];
}
interface EventList {
  events: StoredEvent[];
  count: number;
  next_timestamp: string | null;
}

const ms = (value: number): string => `${value.toFixed(1)} ms`;
const byCreatedAt = (a: { created_at: string }, b: { created_at: string }): number => a.created_at.localeCompare(b.created_at);
const quantile = (values: number[], q: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))];
const runFilter = `metadata_filter=demo_run:${RUN}`;

async function step(title: string, run: () => Promise<string[]>): Promise<void> {
  const started = performance.now();
  const lines = await run();
  console.log(`ok  ${title} (${ms(performance.now() - started)})`);
  for (const line of lines) console.log(`      ${line}`);
}

/** Lists with `query` and checks that exactly `expected` come back, in the given order. */
async function expectList(query: string, expected: Posted[], order: 'asc' | 'desc'): Promise<{ list: EventList; ms: number }> {
  const { json: list, ms: took } = await callJson<EventList>('GET', `/v2/events?${query}`, 200);
  const want = [...expected].sort(byCreatedAt);
  if (order === 'desc') want.reverse();
  check(list.count === list.events.length, `count ${list.count} differs from ${list.events.length} events returned`);
  const got = list.events.map((e) => e.id).join(',');
  check(got === want.map((e) => e.id).join(','), `GET /v2/events?${query}: got ${list.count} events, expected ${want.length} (ids or order differ)`);
  return { list, ms: took };
}

async function main(): Promise<void> {
  console.log(`edge-event-store demo against ${STORE_URL} (run ${RUN})\n`);
  const health = await call('GET', '/health').catch((err: Error) => {
    throw new DemoFailure(`no store at ${STORE_URL} (${err.message}); start one with \`npm start\``);
  });
  check(health.status === 200, `/health answered ${health.status}: ${health.bytes.toString()}`);

  const latencies: number[] = [];
  const posted: Posted[] = [];
  let imageBytes = 0;
  const start = new Date(Date.now() - ROUNDS * 2000);

  await step(`ingest: ${ROUNDS} rounds of ${CAMERAS.length} cameras posting at once`, async () => {
    const started = performance.now();
    for (let n = 0; n < ROUNDS; n++) {
      const moment = new Date(start.getTime() + n * 2000);
      const wave = CAMERAS.map((cam) => {
        const { body, metadata, schema } = cameraEvent(cam, n, moment);
        imageBytes += cam.image.bytes.length;
        return post(body, metadata, schema, latencies, cam.image);
      });
      posted.push(...(await Promise.all(wave)));
    }
    const seconds = (performance.now() - started) / 1000;
    return [
      `${posted.length} events, ${posted.length} images (${(imageBytes / 1024 / 1024).toFixed(1)} MiB of JPEG) in ${seconds.toFixed(2)} s`,
      `create latency p50 ${ms(quantile(latencies, 0.5))}, p95 ${ms(quantile(latencies, 0.95))}, max ${ms(Math.max(...latencies))}`,
    ];
  });

  const rated = posted.filter((e) => e.schema === 'quality_check' || e.schema === 'safety_alert').slice(0, FEEDBACK_EVENTS);
  await step(`operator feedback on ${rated.length} earlier events`, async () => {
    const feedback = await Promise.all(rated.map((target, i) => {
      const metadata = { demo_run: RUN, line: target.metadata.line, reviewer: `qa-${1 + (i % 2)}`, review_seconds: round(3 + random() * 40) };
      const body = {
        solution: 'edge-demo',
        device_id: 'tablet-qa-1',
        inference_timestamp: new Date().toISOString(),
        event_schema: 'operator_feedback',
        event_data: { relatedEventId: target.id, feedback: pick(['correct', 'correct', 'incorrect', 'inconclusive']) },
        custom_metadata: metadata,
      };
      return post(body, metadata, 'operator_feedback', latencies);
    }));
    posted.push(...feedback);
    const { list } = await expectList(`related_event_id=${rated[0].id}`, [feedback[0]], 'desc');
    check(list.events[0].event_data.related_event_id === rated[0].id, 'feedback event lost its related_event_id');
    return [`${feedback.length} operator_feedback events; related_event_id=${rated[0].id.slice(0, 8)}… finds its rating`];
  });

  const schemas = new Map<string, number>();
  for (const e of posted) schemas.set(e.schema, (schemas.get(e.schema) ?? 0) + 1);
  check(schemas.size === 5, `expected all five event schemas, posted ${[...schemas.keys()].join(', ')}`);

  await step('query: one device, newest first', async () => {
    const ours = posted.filter((e) => e.device_id === 'cam-yard-1');
    const { list, ms: took } = await expectList(`device_id=cam-yard-1&${runFilter}&limit=1000`, ours, 'desc');
    const shapes = list.events.flatMap((e) => e.images).reduce((n, i) => n + i.object_detections.length + i.keypoints.length + i.instance_segmentations.length, 0);
    return [`device_id=cam-yard-1: ${list.count} events with ${shapes} detections/keypoint groups/segmentations (${ms(took)})`];
  });

  await step('query: two schemas (event_schemas=a,b)', async () => {
    const ours = posted.filter((e) => e.schema === 'quality_check' || e.schema === 'safety_alert');
    const { list, ms: took } = await expectList(`event_schemas=quality_check,safety_alert&${runFilter}&limit=1000`, ours, 'desc');
    return [`quality_check + safety_alert: ${list.count} events (${ms(took)})`];
  });

  await step('query: numeric and boolean metadata filters', async () => {
    const hot = posted.filter((e) => typeof e.metadata.temperature_c === 'number' && e.metadata.temperature_c > 30);
    const a = await expectList(`${runFilter}&metadata_filter=temperature_c:gt:30&limit=1000`, hot, 'desc');
    const openHot = hot.filter((e) => e.metadata.door_open === true);
    const b = await expectList(`${runFilter}&metadata_filter=temperature_c:gt:30&metadata_filter=door_open:true&limit=1000`, openHot, 'desc');
    return [
      `temperature_c > 30: ${a.list.count} events (${ms(a.ms)})`,
      `temperature_c > 30 and door_open = true: ${b.list.count} events (${ms(b.ms)})`,
    ];
  });

  const sorted = [...posted].sort(byCreatedAt);
  await step('query: time window, oldest first', async () => {
    const [from, to] = [sorted[10].created_at, sorted[29].created_at];
    const query = `start_time=${encodeURIComponent(from)}&end_time=${encodeURIComponent(to)}&sort_direction=asc&${runFilter}`;
    const { list, ms: took } = await expectList(query, sorted.slice(10, 30), 'asc');
    return [`start_time=${from} end_time=${to}: ${list.count} events, ascending (${ms(took)})`];
  });

  await step('query: paging with next_timestamp', async () => {
    const seen: string[] = [];
    let endTime: string | null = null;
    let pages = 0;
    do {
      const bound: string = endTime === null ? '' : `&end_time=${encodeURIComponent(endTime)}`;
      const { json } = await callJson<EventList>('GET', `/v2/events?${runFilter}&limit=7${bound}`, 200);
      seen.push(...json.events.map((e) => e.id));
      endTime = json.next_timestamp;
      pages++;
      check(pages <= posted.length, 'paging does not end');
    } while (endTime !== null);
    const want = [...sorted].reverse().map((e) => e.id);
    check(seen.join(',') === want.join(','), `paging returned ${seen.length} events (${new Set(seen).size} distinct), expected ${want.length}`);
    return [`${pages} pages of 7: all ${seen.length} events once each, newest first`];
  });

  await step('count statistics and latest events', async () => {
    const yard = posted.filter((e) => e.device_id === 'cam-yard-1').length;
    type Stats = { total_count: number; filtered_count: number; oldest_timestamp: string | null; newest_timestamp: string | null };
    const { json: stats, ms: took } = await callJson<Stats>('GET', '/events/count/stats?device_id=cam-yard-1&event_schema=safety_alert', 200);
    check(stats.filtered_count >= yard && stats.total_count >= posted.length, `count stats too low: ${JSON.stringify(stats)}`);
    check(stats.oldest_timestamp !== null && stats.newest_timestamp !== null && stats.oldest_timestamp <= stats.newest_timestamp, 'count stats timestamps out of order');
    const { json: latest } = await callJson<EventList>('GET', '/v2/events/latest/query?limit=5', 200);
    const times = latest.events.map((e) => e.created_at);
    check(latest.count === 5 && times.every((t, i) => i === 0 || times[i - 1] > t), 'latest/query is not 5 events, newest first');
    check(times[0] >= sorted[sorted.length - 1].created_at, 'latest/query misses the newest event');
    return [
      `cam-yard-1 safety alerts: ${stats.filtered_count} of ${stats.total_count} in the store (${ms(took)}), ${stats.oldest_timestamp} .. ${stats.newest_timestamp}`,
      `latest/query?limit=5: newest first, starting with ${latest.events[0].event_schema} from ${latest.events[0].device_id} at ${times[0]}`,
    ];
  });

  await step('download an image whole and with a Range', async () => {
    const { fileId, fixture } = posted.find((e) => e.image?.fixture === rocket)!.image!;
    const whole = await call('GET', `/images/${fileId}`);
    check(whole.status === 200 && whole.bytes.equals(fixture.bytes), `GET /images/${fileId}: ${whole.status}, ${whole.bytes.length} bytes differ from ${fixture.name}`);
    check(whole.headers.get('content-type') === 'image/jpeg', `content type ${whole.headers.get('content-type')}`);
    const part = await call('GET', `/images/${fileId}`, undefined, { Range: 'bytes=0-1023' });
    const expectedRange = `bytes 0-1023/${fixture.bytes.length}`;
    check(part.status === 206 && part.headers.get('content-range') === expectedRange, `Range answered ${part.status} ${part.headers.get('content-range')}`);
    check(part.bytes.equals(fixture.bytes.subarray(0, 1024)), 'the first 1024 bytes differ from the fixture');
    return [
      `${fixture.name}: ${whole.bytes.length} bytes identical (${ms(whole.ms)})`,
      `Range bytes=0-1023: 206, ${expectedRange}, bytes identical (${ms(part.ms)})`,
    ];
  });

  await step('a producer\'s keypoint event, sent as the inference server\'s sinks send it', async () => {
    // No `occluded`, the model output's own keys, base64 wrapped at 76 columns (Python's
    // base64.encodebytes): stored as the contract shapes it (docs/API.md, "Create an event").
    const wrapped = rocket.base64.replace(/(.{76})/g, '$1\n');
    const box = { x: 320, y: 240, width: 180, height: 400, confidence: 0.87 };
    const body = {
      solution: 'edge-demo', device_id: 'jetson-demo', inference_timestamp: new Date().toISOString(),
      event_schema: 'custom', event_data: { value: 'person' }, custom_metadata: { demo_producer: RUN },
      images: [{
        label: 'output_image', base64_image: wrapped,
        keypoints: [{ class: 'person', ...box, class_id: 0, detection_id: randomUUID(), keypoints: [{ id: 0, x: 300, y: 80 }, { id: 1, x: 290, y: 70 }] }],
      }],
    };
    const { json: created } = await callJson<{ id: string }>('POST', '/v2/events', 201, body);
    const { json: stored } = await callJson<StoredEvent>('GET', `/v2/events/${created.id}`, 200);
    const group = stored.images[0].keypoints[0] as { keypoints: { occluded: boolean }[]; class_id?: unknown };
    check(group.keypoints.every((k) => k.occluded === false), `occluded not stored as false: ${JSON.stringify(group.keypoints)}`);
    check(group.class_id === undefined, 'a model output key was stored');
    const image = await call('GET', `/images/${stored.images[0].file_id}`);
    check(image.bytes.equals(rocket.bytes), 'the wrapped base64 did not decode to the JPEG');
    return [`keypoints ${JSON.stringify(group.keypoints)}; class_id and detection_id dropped; ${image.bytes.length} JPEG bytes identical`];
  });

  await step('hosted search through the store\'s gateway, with the project\'s own CLI', async () => {
    const workspace = process.env.SEARCH_WORKSPACE;
    if (!workspace) return ['skipped: start the store with SEARCH_BASE_URL and SEARCH_API_KEY, and run the demo with SEARCH_WORKSPACE set'];
    // The CLI sends its key as `api_key`: here the store's own key, which the gateway swaps for the device's hosted key.
    const cli = spawnSync(process.execPath, [path.join(packageRoot, 'dist', 'src', 'cli.js'), 'search', '*', '--json', '--limit', '3'], {
      env: { ...process.env, SEARCH_BASE_URL: STORE_URL, SEARCH_API_KEY: API_KEY ?? 'unused-auth-off', SEARCH_WORKSPACE: workspace },
      encoding: 'utf8',
    });
    check(cli.status === 0, `edge-events search through the gateway exited ${cli.status}: ${cli.stderr}`);
    const page = JSON.parse(cli.stdout) as { total: number; results: unknown[] };
    return [`SEARCH_BASE_URL=${STORE_URL} SEARCH_API_KEY=<the store's API_KEY> edge-events search '*' --limit 3: ${page.results.length} of ${page.total} results`];
  });

  console.log(`\nsummary: ${posted.length} events stored and read back (${[...schemas].map(([s, n]) => `${n} ${s}`).join(', ')})`);
  console.log(`         from ${new Set(posted.map((e) => e.device_id)).size} devices; create p50 ${ms(quantile(latencies, 0.5))}; all checks passed`);
}

main().catch((err: unknown) => {
  console.error(`\nFAILED: ${err instanceof DemoFailure ? err.message : (err as Error).stack ?? err}`);
  process.exit(1);
});
