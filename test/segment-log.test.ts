/**
 * The segment log's frames (docs/STORAGE.md, "The segment log"): what an append writes a scan
 * reads back, a torn tail ends a scan at the last whole frame, and a damaged frame is never
 * taken for a good one.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { SegmentAppender } from '../src/store/log/blob-log.js';
import { segmentFileName } from '../src/store/log/segment-files.js';
import { decodeRecordFrame, encodeRecordFrame } from '../src/store/log/record-frame.js';
import { blobCrcMatches, FRAME_HEADER_BYTES } from '../src/store/log/segment-frames.js';
import { timeOrderedId } from '../src/store/record/ids.js';
import { fixture } from './support/events.js';
import { tempDataDir } from './support/store-server.js';
import { scan } from './support/segment-scan.js';

const image = fixture('cat.jpg');
const eventId = timeOrderedId();
const fileId = timeOrderedId();
const recordData = encodeRecordFrame({ record: Buffer.from('stored record bytes'), files: [{ fileId, contentType: 'image/jpeg' }] });

/** Appends one image frame and one record frame to segment 1 of a fresh directory. */
async function oneCreate(): Promise<{ file: string; end: number }> {
  const dir = tempDataDir();
  const appender = new SegmentAppender(dir, () => 1);
  const appended = await appender.append([
    { id: fileId, kind: 'image', bytes: image },
    { id: eventId, kind: 'record', bytes: recordData },
  ]);
  await appender.close();
  return { file: path.join(dir, segmentFileName(1)), end: appended.end };
}

t.test('an append reads back: kinds, ids, places and record data', async (t) => {
  const { file, end } = await oneCreate();
  t.equal(fs.statSync(file).size, end);
  const frames = await scan(file);
  t.same(frames.map((f) => [f.kind, f.id, f.offset, f.length]), [
    ['image', fileId, FRAME_HEADER_BYTES, image.length],
    ['record', eventId, 2 * FRAME_HEADER_BYTES + image.length, recordData.length],
  ]);
  t.same(decodeRecordFrame(frames[1].data!), { record: Buffer.from('stored record bytes'), files: [{ fileId, contentType: 'image/jpeg' }] });
  const handle = await fsp.open(file, 'r');
  t.ok(await blobCrcMatches(handle, frames[0]), 'the image matches its CRC');
  await handle.close();
  t.same((await scan(file, frames[1].offset - FRAME_HEADER_BYTES)).map((f) => f.kind), ['record'], 'a scan starts at a frame boundary');
});

t.test('a torn tail ends the scan at the last whole frame, at every cut', async (t) => {
  const { file, end } = await oneCreate();
  const whole = fs.readFileSync(file);
  const recordStart = end - recordData.length - FRAME_HEADER_BYTES;
  for (const cut of [1, FRAME_HEADER_BYTES - 1, FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + 5, recordData.length + FRAME_HEADER_BYTES - 1]) {
    fs.writeFileSync(file, whole.subarray(0, recordStart + cut));
    t.same((await scan(file)).map((f) => f.kind), ['image'], `record frame cut after ${cut} bytes`);
  }
  fs.writeFileSync(file, whole.subarray(0, FRAME_HEADER_BYTES + 100));
  t.same(await scan(file), [], 'an image frame cut short is no frame');
});

t.test('a damaged record frame or image is never taken for a good one', async (t) => {
  const { file, end } = await oneCreate();
  const whole = fs.readFileSync(file);
  const damagedRecord = Buffer.from(whole);
  damagedRecord[end - 3] ^= 0xff;
  fs.writeFileSync(file, damagedRecord);
  t.same((await scan(file)).map((f) => f.kind), ['image'], 'a record failing its CRC ends the scan');

  const damagedImage = Buffer.from(whole);
  damagedImage[FRAME_HEADER_BYTES + 1000] ^= 0xff;
  fs.writeFileSync(file, damagedImage);
  const frames = await scan(file);
  const handle = await fsp.open(file, 'r');
  t.notOk(await blobCrcMatches(handle, frames[0]), 'the image fails its CRC');
  await handle.close();

  const zeroed = Buffer.from(whole);
  zeroed.fill(0, end - recordData.length - FRAME_HEADER_BYTES, end - recordData.length);
  fs.writeFileSync(file, zeroed);
  t.same((await scan(file)).map((f) => f.kind), ['image'], 'a zeroed header (a page never written) ends the scan');
});

t.test('ids are UUIDv7: version 7, RFC 9562 variant, ordered by time', async (t) => {
  const early = timeOrderedId(1_700_000_000_000);
  const late = timeOrderedId(1_700_000_000_001);
  t.match(early, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.ok(early < late);
  t.equal(parseInt(early.replaceAll('-', '').slice(0, 12), 16), 1_700_000_000_000, 'the first 48 bits are the time in ms');
});
