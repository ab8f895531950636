/**
 * Recycled segment files (src/store/log/segment-files.ts, docs/STORAGE.md "Recycled segments"): a
 * reclaimed segment that rolled and carries its own tag is kept, up to RECYCLED_SEGMENTS_KEPT;
 * the log's next segment takes it and overwrites its blocks without growing the file; a scan of
 * the new segment stops at the former life's frames, even where one starts exactly where the new
 * frames end.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { SegmentAppender } from '../src/store/log/blob-log.js';
import { timeOrderedId } from '../src/store/record/ids.js';
import { RECYCLED_MIN_AGE_MS, RECYCLED_SEGMENTS_KEPT, recycledFileName, recycleOrRemove, releaseRecycledIfLow, segmentFileName } from '../src/store/log/segment-files.js';
import { checksum, frameHeader } from '../src/store/log/segment-frames.js';
import { tempDataDir } from './support/store-server.js';
import { scan } from './support/segment-scan.js';

/** Segments roll at this size (bytes) in these tests, and are kept from it on. */
const ROLL_BYTES = 64 * 1024;

/** `length` bytes of `fill`. */
const bytes = (length: number, fill: number) => Buffer.alloc(length, fill);

/** Sets the recycled files in `dir` as kept an hour ago, old enough to be taken. */
function ageRecycled(dir: string): void {
  const hourAgo = new Date(Date.now() - 3_600_000);
  for (const name of fs.readdirSync(dir)) if (name.startsWith('recycled-')) fs.utimesSync(path.join(dir, name), hourAgo, hourAgo);
}

/** An appender over `dir` numbering its segments from `first` on. */
function appenderFrom(dir: string, first: number): SegmentAppender {
  let next = first;
  return new SegmentAppender(dir, () => next++, ROLL_BYTES);
}

t.test('the next segment takes a recycled file, overwrites it without growing it, and its scan stops at the former frames', async (t) => {
  const dir = tempDataDir();
  const appender = appenderFrom(dir, 1);
  // Segment 1's former life: an image and a record, four times over, past the roll size.
  const former = Array.from({ length: 4 }, () => [
    { id: timeOrderedId(), kind: 'image' as const, bytes: bytes(20_000, 1) },
    { id: timeOrderedId(), kind: 'record' as const, bytes: bytes(300, 2) },
  ]).flat();
  for (const frame of former) await appender.append([frame]);
  const rolled = await appender.append([{ id: timeOrderedId(), kind: 'record', bytes: bytes(300, 3) }]);
  t.equal(rolled.segment, 2, 'segment 1 rolled');
  const formerSize = fs.statSync(path.join(dir, segmentFileName(1))).size;

  t.equal(await recycleOrRemove(dir, 1, ROLL_BYTES), true, 'segment 1, which rolled and carries its tag, is kept');
  t.same(fs.readdirSync(dir).sort(), [recycledFileName(1), segmentFileName(2)]);

  for (let filled = rolled.end; filled < ROLL_BYTES; filled = (await appender.append([{ id: timeOrderedId(), kind: 'image', bytes: bytes(20_000, 4) }])).end);
  const young = await appender.append([{ id: timeOrderedId(), kind: 'record', bytes: bytes(300, 4) }]);
  t.same([young.segment, fs.existsSync(path.join(dir, recycledFileName(1)))], [3, true], `a file kept less than ${RECYCLED_MIN_AGE_MS} ms ago is not taken`);
  for (let filled = young.end; filled < ROLL_BYTES; filled = (await appender.append([{ id: timeOrderedId(), kind: 'image', bytes: bytes(20_000, 4) }])).end);
  ageRecycled(dir);
  // The new segment's first frame is exactly as long as the former first frame, so the next
  // header a scan reads is the former second frame's, whole and with a right CRC.
  const first = await appender.append([{ id: timeOrderedId(), kind: 'image', bytes: bytes(20_000, 5) }]);
  t.same([first.segment, first.start], [4, 0], 'segment 4 begins');
  t.same(fs.readdirSync(dir).sort(), [segmentFileName(2), segmentFileName(3), segmentFileName(4)], 'in the recycled file, renamed');
  t.equal(fs.statSync(path.join(dir, segmentFileName(4))).size, formerSize, 'overwritten, not grown');
  const frames = await scan(path.join(dir, segmentFileName(4)));
  t.same(frames.map((f) => [f.kind, f.offset, f.length]), [['image', first.placed[0].offset, 20_000]], 'its scan finds the new frame alone');

  await appender.close();
  t.equal(fs.statSync(path.join(dir, segmentFileName(4))).size, first.end, 'a clean stop cuts the former frames off');
});

t.test('a reclaimed segment is removed when it never rolled, is untagged, or enough are kept', async (t) => {
  const dir = tempDataDir();
  const appender = appenderFrom(dir, 1);
  await appender.append([{ id: timeOrderedId(), kind: 'record', bytes: bytes(300, 1) }]);
  await appender.close();
  t.equal(await recycleOrRemove(dir, 1, ROLL_BYTES), false, 'a segment shorter than the roll size');

  // An uploaded video's segment: its frame was staged untagged.
  const data = bytes(ROLL_BYTES, 2);
  fs.writeFileSync(path.join(dir, segmentFileName(2)), Buffer.concat([frameHeader(timeOrderedId(), 'video', data.length, checksum(data), 0), data]));
  t.equal(await recycleOrRemove(dir, 2, ROLL_BYTES), false, 'an upload, untagged');

  const full = appenderFrom(dir, 10);
  const nearlyFull = appenderFrom(dir, 5);
  await nearlyFull.append([{ id: timeOrderedId(), kind: 'image', bytes: bytes(ROLL_BYTES, 5) }]);
  await nearlyFull.close();
  const size = fs.statSync(path.join(dir, segmentFileName(5))).size;
  t.equal(await recycleOrRemove(dir, 5, ROLL_BYTES, async () => 4 * size - 1), false, 'one on a disk with less than four times its size free');

  for (let i = 0; i < 2 * (RECYCLED_SEGMENTS_KEPT + 1) + 1; i++) await full.append([{ id: timeOrderedId(), kind: 'image', bytes: bytes(ROLL_BYTES / 2, 3) }]);
  await full.close();
  const kept = [];
  for (const segment of [10, 11, 12]) kept.push(await recycleOrRemove(dir, segment, ROLL_BYTES));
  t.same(kept, [...Array<boolean>(RECYCLED_SEGMENTS_KEPT).fill(true), false], `${RECYCLED_SEGMENTS_KEPT} kept, then removed`);
  t.same(fs.readdirSync(dir).sort(), [recycledFileName(10), recycledFileName(11), segmentFileName(13)]);
  t.equal(await recycleOrRemove(dir, 12, ROLL_BYTES), false, 'a segment already gone is no error');
});

t.test('recycled files go back to a disk that filled after they were kept', async (t) => {
  const dir = tempDataDir();
  const log = appenderFrom(dir, 1);
  for (let i = 0; i < 5; i++) await log.append([{ id: timeOrderedId(), kind: 'image', bytes: bytes(ROLL_BYTES / 2, 1) }]);
  await log.close();
  t.same([await recycleOrRemove(dir, 1, ROLL_BYTES), await recycleOrRemove(dir, 2, ROLL_BYTES)], [true, true], 'two kept');
  const size = fs.statSync(path.join(dir, recycledFileName(1))).size;
  t.equal(await releaseRecycledIfLow(dir, async () => 4 * size), 0, 'with four times a file\'s size free, both stay');
  let free = 4 * size - 1;
  t.equal(await releaseRecycledIfLow(dir, async () => free), 2, 'with less, both go');
  t.same(fs.readdirSync(dir), [segmentFileName(3)]);
  free = 0;
  t.equal(await releaseRecycledIfLow(dir, async () => free), 0, 'none left, none removed');
});
