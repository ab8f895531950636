/**
 * An image must be an image (docs/API.md, "Image types"), over real HTTP with real photos: bytes
 * that are text, a PDF or an SVG answer one 422 naming each payload and what its bytes are, and
 * store nothing, whether the body is prepared on the HTTP thread or, over 1 MiB, on the create
 * preparer's worker; JPEG, PNG, TIFF and AVIF images are stored with the type told from their
 * bytes; NON_IMAGE_PAYLOADS=warn stores the others, named in the 201's `warnings`.
 */
import sharp from 'sharp';
import t from 'tap';
import { loadConfig } from '../src/config.js';
import { OFF_THREAD_MIN_WEIGHT_BYTES } from '../src/events/create-preparer.js';
import { fixture, getJson, postJson, smallEvent } from './support/events.js';
import { startStore } from './support/store-server.js';

const TEXT = Buffer.from('hello world');
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>');
const BINARY = Buffer.from([0x00, 0x01, 0x02, 0xfe, 0xff, 0x10, 0x20, 0x30, 0x40, 0x50]);

const base64 = (bytes: Buffer) => bytes.toString('base64');

/** One create of three image entries whose payloads are no image, beside a real photo. */
function nonImageEvent(): Record<string, unknown> {
  return {
    ...smallEvent(),
    images: [
      { base64Image: base64(TEXT) },
      { base64Image: base64(fixture('cat.jpg')), inputBase64Image: base64(PDF) },
      { base64Image: base64(SVG), inputBase64Image: base64(BINARY) },
    ],
  };
}

const REFUSED = [
  [['body', 'images', 0, 'base64Image'], 'text ("hello world")'],
  [['body', 'images', 1, 'inputBase64Image'], 'PDF (application/pdf)'],
  [['body', 'images', 2, 'base64Image'], 'SVG (image/svg+xml)'],
  [['body', 'images', 2, 'inputBase64Image'], 'of no known type (first bytes 00 01 02 fe ff 10 20 30 ...)'],
] as const;

t.test('bytes that are no image answer one 422 naming each, on either thread, and nothing is stored', async (t) => {
  const store = await startStore();
  t.teardown(() => store.stop());
  // Over OFF_THREAD_MIN_WEIGHT_BYTES: prepared on the create preparer's worker.
  const heavy = nonImageEvent();
  (heavy.images as Record<string, unknown>[]).push(...Array.from({ length: 10 }, () => ({ base64Image: base64(fixture('retina.jpg')) })));
  t.ok(JSON.stringify(heavy).length > OFF_THREAD_MIN_WEIGHT_BYTES, 'the heavy body weighs more than the in-place bound');
  for (const [name, body] of [['in place', nonImageEvent()], ['on the worker', heavy]] as const) {
    const refused = await postJson(`${store.url}/v2/events`, body);
    t.equal(refused.status, 422, name);
    t.same(refused.body.detail.map((issue: { loc: unknown[] }) => issue.loc), REFUSED.map(([loc]) => loc), `${name}: every non-image, in order`);
    REFUSED.forEach(([, what], i) => {
      t.equal(refused.body.detail[i].msg, `not an image: the bytes are ${what}; JPEG, PNG, WebP, GIF, AVIF, HEIC, TIFF, BMP and the other image types of docs/API.md, "Image types", are accepted`);
      t.equal(refused.body.detail[i].type, 'value_error.not_an_image');
    });
  }
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, 0, 'nothing stored');
});

t.test('images of several types are stored with the type told from their bytes', async (t) => {
  const store = await startStore();
  t.teardown(() => store.stop());
  const photo = sharp(fixture('camera.jpg'));
  const images: [Buffer, string][] = [
    [fixture('cat.jpg'), 'image/jpeg'],
    [await photo.clone().png().toBuffer(), 'image/png'],
    [await photo.clone().tiff().toBuffer(), 'image/tiff'],
    [await photo.clone().resize(64).avif().toBuffer(), 'image/avif'],
  ];
  const created = await postJson(`${store.url}/v2/events`, { ...smallEvent(), images: images.map(([bytes]) => ({ base64Image: base64(bytes) })) });
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.notOk('warnings' in created.body);
  for (const [i, id] of (created.body.image_ids as string[]).entries()) {
    const served = await fetch(`${store.url}/images/${id}`);
    t.equal(served.headers.get('content-type'), images[i][1]);
    t.ok(Buffer.from(await served.arrayBuffer()).equals(images[i][0]), `${images[i][1]}: the bytes sent`);
  }
});

t.test('NON_IMAGE_PAYLOADS=warn stores them with their type told, named in the warnings', async (t) => {
  const store = await startStore({ NON_IMAGE_PAYLOADS: 'warn' });
  t.teardown(() => store.stop());
  const created = await postJson(`${store.url}/v2/events`, { ...nonImageEvent(), devce_id: 'cam-1' });
  t.equal(created.status, 201, JSON.stringify(created.body));
  const stored = ['application/octet-stream', 'application/pdf', 'image/svg+xml', 'application/octet-stream'];
  t.same(created.body.warnings, [
    { loc: ['body', 'devce_id'], msg: 'unknown key, ignored; did you mean \'device_id\'?', type: 'value_error.unknown_key' },
    ...REFUSED.map(([loc, what], i) => ({ loc, msg: `not an image: the bytes are ${what}; stored as ${stored[i]} (NON_IMAGE_PAYLOADS=warn)`, type: 'value_error.not_an_image' })),
  ], 'the ignored key first, then each non-image');
  const event = (await getJson(`${store.url}/v2/events/${created.body.id}`)).body;
  const text = await fetch(`${store.url}/images/${event.images[0].file_id}`);
  t.equal(text.headers.get('content-type'), 'application/octet-stream');
  t.equal(await text.text(), 'hello world', 'stored as sent');
  const pdf = await fetch(`${store.url}/images/${event.images[1].input_file_id}`);
  t.equal(pdf.headers.get('content-type'), 'application/pdf');
});

t.test('NON_IMAGE_PAYLOADS takes warn or reject', async (t) => {
  t.equal(loadConfig({}).nonImagePayloads, 'reject', 'unset: reject');
  t.equal(loadConfig({ NON_IMAGE_PAYLOADS: 'warn' }).nonImagePayloads, 'warn');
  t.throws(() => loadConfig({ NON_IMAGE_PAYLOADS: 'allow' }), { message: 'Invalid setting NON_IMAGE_PAYLOADS="allow": expected warn or reject (unset: reject)' });
});
