/**
 * The blob log's writes and frames (src/store/log/blob-log.ts, segment-frames.ts; docs/STORAGE.md,
 * "The segment log"), beyond what segment-log.test.ts covers: a writev that writes less than
 * asked is continued exactly, an append of more buffers than IOV_MAX, the frame header's byte
 * layout, and the header checks a scan makes (kind, length bounds) on real files.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { SegmentAppender, ZERO_AHEAD_BYTES } from '../src/store/log/blob-log.js';
import { writeAll, writeAllSync } from '../src/store/log/write-all.js';
import { segmentFileName } from '../src/store/log/segment-files.js';
import { timeOrderedId } from '../src/store/record/ids.js';
import { blobCrcMatches, checksum, FRAME_HEADER_BYTES, frameHeader } from '../src/store/log/segment-frames.js';
import { tempDataDir } from './support/store-server.js';
import { scan } from './support/segment-scan.js';

/** writev's cap on buffers per call (IOV_MAX on Linux), which writeAll must respect. */
const IOV_MAX = 1024;
/** The largest record frame a scan accepts (segment-frames.ts: records are bounded by MAX_RECORD_SIZE_BYTES). */
const MAX_RECORD_FRAME_BYTES = 64 * 1024 * 1024;
const MiB = 1024 * 1024;

/** Deterministic bytes (a linear congruential sequence), so a misplaced byte shows. */
function pattern(length: number, seed: number): Buffer {
  const bytes = Buffer.alloc(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    bytes[i] = x >>> 24;
  }
  return bytes;
}

/** The header and data buffers of frames with data of these lengths, as an append builds them. */
function frameBuffers(lengths: number[]): Buffer[] {
  return lengths.flatMap((length, i) => {
    const data = pattern(length, i + 1);
    return [frameHeader(timeOrderedId(), i % 2 ? 'record' : 'image', length, checksum(data), 0), data];
  });
}

interface WritevCall {
  buffers: number;
  position: number;
  wrote: number;
}

/**
 * A fake FileHandle (only `writev`): a real writev cannot be made to write short on a local
 * file, so this one passes at most `limits[k]` bytes of call k (cycling) to the real file's
 * writev and reports what that wrote, as a short write on a full pipe or a signal would.
 */
function shortWritingHandle(real: fsp.FileHandle, limits: number[]) {
  const calls: WritevCall[] = [];
  const handle = {
    async writev(buffers: Buffer[], position: number) {
      let room = limits[calls.length % limits.length];
      const taken: Buffer[] = [];
      for (const buffer of buffers) {
        if (room <= 0) break;
        const part = buffer.subarray(0, room);
        taken.push(part);
        room -= part.length;
      }
      const { bytesWritten } = await real.writev(taken, position);
      calls.push({ buffers: buffers.length, position, wrote: bytesWritten });
      return { bytesWritten, buffers };
    },
  };
  return { calls, handle: handle as unknown as fsp.FileHandle };
}

t.test('a writev that writes less than asked is continued exactly where it stopped', async (t) => {
  const buffers = frameBuffers([0, 1, 100, 700, 3]);
  const expected = Buffer.concat(buffers);
  const before = Buffer.from('0123456789'); // written at a non-zero position, as appends are
  // Cuts inside headers (1, 7, 35), exactly at a header's end (36), one past (37), mid-data.
  for (const limits of [[1_000_000], [1], [7], [35, 37], [36], [300], [3, 100_000], [701, 2]]) {
    const file = path.join(tempDataDir(), 'segment');
    fs.writeFileSync(file, before);
    const real = await fsp.open(file, 'r+');
    const { calls, handle } = shortWritingHandle(real, limits);
    await writeAll(handle, buffers, before.length);
    await real.close();
    const name = `at most ${limits.join(', ')} bytes a call`;
    t.ok(fs.readFileSync(file).equals(Buffer.concat([before, expected])), `${name}: the file holds every byte once, in order`);
    t.equal(calls.reduce((sum, c) => sum + c.wrote, 0), expected.length, `${name}: ${calls.length} calls wrote ${expected.length} bytes`);
    t.ok(calls.every((c, i) => i === 0 || c.position === calls[i - 1].position + calls[i - 1].wrote), `${name}: each call starts where the last stopped`);
    if (limits[0] < expected.length) t.ok(calls.length > 1, `${name}: short writes were continued`);
  }
});

t.test('more buffers than IOV_MAX go in several writevs of at most IOV_MAX, short writes too', async (t) => {
  const lengths = Array.from({ length: 1250 }, (_, i) => i % 97); // 2,500 buffers, some empty
  const buffers = frameBuffers(lengths);
  const expected = Buffer.concat(buffers);
  for (const limits of [[Number.MAX_SAFE_INTEGER], [5000, 1]]) {
    const file = path.join(tempDataDir(), 'segment');
    const real = await fsp.open(file, 'w+');
    const { calls, handle } = shortWritingHandle(real, limits);
    await writeAll(handle, buffers, 0);
    await real.close();
    t.ok(fs.readFileSync(file).equals(expected), `limits ${limits}: the file holds every byte in order`);
    t.ok(calls.every((c) => c.buffers <= IOV_MAX), `limits ${limits}: no call passes more than ${IOV_MAX} buffers (most: ${Math.max(...calls.map((c) => c.buffers))})`);
    if (limits[0] === Number.MAX_SAFE_INTEGER) t.same(calls.map((c) => c.buffers), [1024, 1024, 452], 'whole writes: three calls');
  }
});

t.test('writeAllSync writes more buffers than IOV_MAX at their position, byte for byte', async (t) => {
  const file = path.join(tempDataDir(), 'sync.blob');
  const before = pattern(777, 99);
  fs.writeFileSync(file, before);
  const buffers = frameBuffers(Array.from({ length: IOV_MAX }, (_, i) => 1 + ((i * 37) % 300)));
  const fd = fs.openSync(file, 'r+');
  try {
    writeAllSync(fd, buffers, before.length);
  } finally {
    fs.closeSync(fd);
  }
  t.ok(fs.readFileSync(file).equals(Buffer.concat([before, ...buffers])), `${buffers.length} buffers written after the file's first ${before.length} bytes`);
});

t.test('an append of 1,500 frames (3,000 buffers) reads back frame by frame', async (t) => {
  const dir = tempDataDir();
  const appender = new SegmentAppender(dir, () => 1);
  const frames = Array.from({ length: 1500 }, (_, i) => ({ id: timeOrderedId(), kind: i % 3 === 2 ? 'record' as const : 'image' as const, bytes: pattern(1 + (i % 200), i) })); // no data frame is empty
  const appended = await appender.append(frames);
  await appender.close();
  const file = path.join(dir, segmentFileName(1));
  t.equal(fs.statSync(file).size, appended.end);
  const scanned = await scan(file);
  t.equal(scanned.length, 1500, 'every frame found');
  t.same(scanned.map((f) => [f.id, f.kind, f.offset, f.length]), appended.placed.map((p, i) => [frames[i].id, frames[i].kind, p.offset, p.length]));
  const handle = await fsp.open(file, 'r');
  let matching = 0;
  for (const frame of scanned) if (await blobCrcMatches(handle, frame)) matching++;
  await handle.close();
  t.equal(matching, 1500, 'every frame matches its CRC');
});

t.test('a scan reads through its 256 KiB window: frames across its edges and larger than it keep their exact data', async (t) => {
  const dir = tempDataDir();
  const appender = new SegmentAppender(dir, () => 1);
  // Sizes around the window: small records, records and images that straddle its edges, and a
  // record and an image larger than the window itself.
  const sizes = [100, 200_000, 60_000, 300_000, 5, 262_144, 262_100, 1, 400_000, 70_000, 150_000, 33];
  const frames = Array.from({ length: 60 }, (_, i) => ({ id: timeOrderedId(), kind: i % 4 === 1 ? 'image' as const : 'record' as const, bytes: pattern(sizes[i % sizes.length], i + 7) }));
  const appended = await appender.append(frames);
  await appender.close();
  const scanned = await scan(path.join(dir, segmentFileName(1)));
  t.same(scanned.map((f) => [f.id, f.kind, f.offset, f.length]), appended.placed.map((p, i) => [frames[i].id, frames[i].kind, p.offset, p.length]), 'every frame found in place');
  const records = scanned.map((f, i) => [f, frames[i]] as const).filter(([, frame]) => frame.kind === 'record');
  t.ok(records.every(([f, frame]) => f.data !== undefined && f.data.equals(frame.bytes)), 'every record frame keeps its own exact data after the scan has moved on');
  t.ok(scanned.filter((f) => f.kind === 'image').every((f) => f.data === undefined), 'image data is not read');
});

t.test("a frame header is laid out as docs/STORAGE.md's table says", async (t) => {
  const id = '0190f3a4-5b6c-7d8e-9fa0-b1c2d3e4f5a6';
  const data = Buffer.from('123456789');
  const crc = checksum(data);
  t.equal(crc, 0xe3069283, 'CRC32C (Castagnoli) of "123456789" is the standard check value');
  const header = frameHeader(id, 'record', data.length, crc, 0x0a0b0c);
  t.equal(header.length, FRAME_HEADER_BYTES);
  t.equal(header.toString('latin1', 0, 4), 'EEB1', 'magic');
  t.same([...header.subarray(4, 8)], [16, 0x0a, 0x0b, 0x0c], 'kind 16 (record), then the segment tag, 24 bits big-endian');
  t.equal(header.toString('hex', 8, 24), id.replaceAll('-', ''), 'the id as its 16 UUID bytes');
  t.equal(header.readBigUInt64BE(24), 9n, 'data length, u64 big-endian');
  t.equal(header.readUInt32BE(32), 0xe3069283, 'CRC32C of the data, u32 big-endian');
  t.same(['image', 'video', 'local_only'].map((kind) => frameHeader(id, kind as 'image', 0, 0, 0)[4]), [1, 2, 3], 'kinds 1, 2, 3');
});

/** Writes one frame header at the start of a new file whose size is `size` (sparse beyond the header). */
function headerOnlyFile(header: Buffer, size: number): string {
  const file = path.join(tempDataDir(), 'segment');
  fs.writeFileSync(file, header);
  fs.truncateSync(file, size);
  return file;
}

/** CRC32C of `length` zero bytes. */
function zerosChecksum(length: number): number {
  const zeros = Buffer.alloc(MiB);
  let crc = 0;
  for (let done = 0; done < length; done += MiB) crc = checksum(zeros.subarray(0, Math.min(MiB, length - done)), crc);
  return crc;
}

t.test('a scan ends at a header of an unknown kind, or one whose length runs past the file', async (t) => {
  const id = timeOrderedId();
  const data = Buffer.from('payload');
  const good = Buffer.concat([frameHeader(id, 'record', data.length, checksum(data), 0), data]);
  for (const code of [0, 4, 15, 20, 255]) {
    const bad = Buffer.from(good);
    bad[4] = code;
    const file = path.join(tempDataDir(), 'segment');
    fs.writeFileSync(file, Buffer.concat([good, bad, good]));
    t.same((await scan(file)).map((f) => f.kind), ['record'], `kind code ${code}: the scan stops before it`);
  }
  for (const length of [2n ** 64n - 1n, 2n ** 53n + 1n, BigInt(data.length + 1)]) {
    const bad = Buffer.from(good);
    bad.writeBigUInt64BE(length, 24);
    const file = path.join(tempDataDir(), 'segment');
    fs.writeFileSync(file, Buffer.concat([good, bad]));
    t.same((await scan(file)).map((f) => f.kind), ['record'], `a length of ${length} past the end of the file ends the scan`);
  }
});

t.test('a record frame longer than a record can be ends the scan; a blob frame of that length does not', async (t) => {
  // Sparse files: the data are zeros that take no disk space; their CRC is right, so only the
  // length bound can stop the scan.
  const id = timeOrderedId();
  const over = MAX_RECORD_FRAME_BYTES + 1;
  const overCrc = zerosChecksum(over);
  t.same(await scan(headerOnlyFile(frameHeader(id, 'record', over, overCrc, 0), FRAME_HEADER_BYTES + over)), [], `a ${over}-byte record frame is torn`);
  const blobs = await scan(headerOnlyFile(frameHeader(id, 'video', over, overCrc, 0), FRAME_HEADER_BYTES + over));
  t.same(blobs.map((f) => [f.kind, f.length, f.data]), [['video', over, undefined]], 'a video frame of the same length is found, its data not read');
  const atLimit = await scan(headerOnlyFile(frameHeader(id, 'record', MAX_RECORD_FRAME_BYTES, zerosChecksum(MAX_RECORD_FRAME_BYTES), 0), FRAME_HEADER_BYTES + MAX_RECORD_FRAME_BYTES));
  t.same(atLimit.map((f) => [f.kind, f.length]), [['record', MAX_RECORD_FRAME_BYTES]], 'a record frame of exactly the limit is read and checked');
});

t.test('a scan does not check blob data: blobCrcMatches does, across its 1 MiB read chunks', async (t) => {
  const dir = tempDataDir();
  const appender = new SegmentAppender(dir, () => 1);
  const video = pattern(2 * MiB + 12345, 7); // three read chunks, the last one short
  const recordId = timeOrderedId();
  await appender.append([
    { id: timeOrderedId(), kind: 'video', bytes: video },
    { id: timeOrderedId(), kind: 'local_only', bytes: Buffer.alloc(0) },
    { id: recordId, kind: 'record', bytes: Buffer.from('record') },
  ]);
  await appender.close();
  const file = path.join(dir, segmentFileName(1));
  const whole = fs.readFileSync(file);
  const check = async (bytes: Buffer) => {
    fs.writeFileSync(file, bytes);
    const frames = await scan(file);
    const handle = await fsp.open(file, 'r');
    try {
      const matches = [];
      for (const frame of frames) matches.push(await blobCrcMatches(handle, frame));
      return { kinds: frames.map((f) => f.kind), matches };
    } finally {
      await handle.close();
    }
  };
  t.same(await check(whole), { kinds: ['video', 'local_only', 'record'], matches: [true, true, true] }, 'intact; an empty blob matches CRC 0');
  for (const at of [0, MiB - 1, MiB, 2 * MiB + 12344]) {
    const damaged = Buffer.from(whole);
    damaged[FRAME_HEADER_BYTES + at] ^= 0x01;
    t.same(await check(damaged), { kinds: ['video', 'local_only', 'record'], matches: [false, true, true] },
      `a bit flipped at data byte ${at}: the scan goes on past the video, whose CRC fails`);
  }
  // A frame from an earlier scan whose bytes were cut from under it (a segment truncated later).
  const [videoFrame] = await scan(file);
  fs.writeFileSync(file, whole.subarray(0, FRAME_HEADER_BYTES + MiB + 5));
  const handle = await fsp.open(file, 'r');
  t.equal(await blobCrcMatches(handle, videoFrame), false, 'a blob cut short by the end of the file does not match');
  await handle.close();
});

t.test('garbage after the last frame, or a scan started off a frame boundary, yields no false frame', async (t) => {
  const data = Buffer.from('a record');
  const frame = Buffer.concat([frameHeader(timeOrderedId(), 'record', data.length, checksum(data), 0), data]);
  const file = path.join(tempDataDir(), 'segment');
  for (const tail of [pattern(FRAME_HEADER_BYTES + 40, 3), Buffer.alloc(4096), Buffer.from('EEB1')]) {
    fs.writeFileSync(file, Buffer.concat([frame, tail]));
    t.same((await scan(file)).map((f) => f.kind), ['record'], `a tail of ${tail.length} bytes after the frame is no frame`);
  }
  fs.writeFileSync(file, Buffer.concat([frame, frame]));
  for (const start of [1, 4, FRAME_HEADER_BYTES, frame.length - 1, 2 * frame.length, 10 * frame.length]) {
    t.same(await scan(file, start), [], `a scan from byte ${start} finds nothing`);
  }
  t.same((await scan(file, frame.length)).length, 1, 'from the second frame boundary: the second frame');
});

t.test('small appends get zeros written ahead of them and then overwrite; large ones extend the file; a close cuts the zeros', async (t) => {
  const dir = tempDataDir();
  const appender = new SegmentAppender(dir, () => 1);
  const file = path.join(dir, segmentFileName(1));
  const small = Buffer.alloc(850, 7);
  const first = await appender.append([{ id: timeOrderedId(), kind: 'record', bytes: small }]);
  t.equal(fs.statSync(file).size, first.end + ZERO_AHEAD_BYTES, 'the first small append wrote zeros ahead of its frame');
  let last = first;
  for (let i = 0; i < 20; i++) last = await appender.append([{ id: timeOrderedId(), kind: 'record', bytes: small }]);
  t.equal(fs.statSync(file).size, first.end + ZERO_AHEAD_BYTES, 'the next appends landed inside the zeros: the file did not grow');
  t.same((await scan(file)).length, 21, 'a scan reads the 21 frames and stops at the zeros');

  // Appends of 256 KiB: the mean passes 16 KiB, and the appends past the zeros extend the file.
  const large = Buffer.alloc(256 * 1024, 9);
  for (let i = 0; i < 12; i++) last = await appender.append([{ id: timeOrderedId(), kind: 'image', bytes: large }]);
  t.equal(fs.statSync(file).size, last.end, 'large appends extend the file to their end, with no zeros after');

  for (let i = 0; i < 30; i++) last = await appender.append([{ id: timeOrderedId(), kind: 'record', bytes: small }]);
  t.ok(fs.statSync(file).size > last.end, 'small appends again: zeros ahead once more');
  await appender.close();
  t.equal(fs.statSync(file).size, last.end, 'a close cuts the zeros: the segment ends with its last frame');
  t.equal((await scan(file)).length, 63);
});

t.test("small appends into the zeros count about their own pages in the process's write_bytes, not the zeros' 1 MiB", async (t) => {
  // Written in one 1 MiB write, the zeros sat in one large folio and Linux counted each small
  // append into it as 1 MiB written (/proc/self/io, and so /stats); docs/STORAGE.md, "The segment log".
  const writeBytes = (): number => Number(/^write_bytes: (\d+)$/m.exec(fs.readFileSync('/proc/self/io', 'utf8'))?.[1]);
  const dir = tempDataDir();
  const appender = new SegmentAppender(dir, () => 1);
  const small = Buffer.alloc(850, 7);
  await appender.append([{ id: timeOrderedId(), kind: 'record', bytes: small }]);
  const before = writeBytes();
  for (let i = 0; i < 50; i++) await appender.append([{ id: timeOrderedId(), kind: 'record', bytes: small }]);
  const perAppend = (writeBytes() - before) / 50;
  await appender.close();
  t.ok(perAppend <= 16 * 1024, `${perAppend.toFixed(0)} bytes counted per small append (at most a few 4 KiB pages)`);
});
