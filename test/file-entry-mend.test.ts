/**
 * A damaged file entry of the index, its blob whole in the log: the consistency pass mends the
 * entry from the blob frame instead of dropping the file (docs/STORAGE.md, "A damaged index").
 * Found by the disk-fault harness: a flipped byte in a `files` entry of data.mdb made an image
 * 404 though its bytes were whole, and `check` then found nothing to repair.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { checksum, FRAME_HEADER_BYTES } from '../src/store/log/segment-frames.js';
import { segmentFileName } from '../src/store/log/segment-files.js';
import { storeHandles } from '../src/store/read/store-view.js';
import { fixture, imageEvent } from './support/events.js';
import { openLocalStore, type LocalStore } from './support/local-store.js';

/** The bytes the store reads for file `fileId` through its entry, or undefined when it has none. */
async function fileBytes(local: LocalStore, fileId: string): Promise<Buffer | undefined> {
  const entry = local.store.getFile(fileId);
  if (!entry) return undefined;
  const bytes = Buffer.alloc(entry.length);
  await local.store[storeHandles].blobs.read(entry.segment, entry.offset, bytes);
  return bytes;
}

const damages = {
  'its CRC': { crc: 0x12345678 },
  'its offset': { offset: FRAME_HEADER_BYTES + 7 },
  'its length': { length: 100 },
};

for (const [what, change] of Object.entries(damages)) {
  t.test(`a files entry with a damaged ${what.slice(4)} is mended from its blob frame, the image kept`, async (t) => {
    const local = await openLocalStore();
    t.teardown(local.close);
    await local.create(imageEvent()); // the image under test is not its segment's first frame
    const { image_ids: [imageId], id } = await local.create(imageEvent());
    const { dbs } = local.store[storeHandles];
    const whole = dbs.files.get(imageId)!;
    await dbs.files.put(imageId, { ...whole, ...change });
    const read = await fileBytes(local, imageId);
    t.ok(!read?.equals(fixture('cat.jpg')) || checksum(read) !== local.store.getFile(imageId)?.crc, `with ${what} damaged, the entry no longer matches the image`);

    const report = await local.lifecycle.checkConsistency();
    t.same(report.fileEntriesMended, [imageId], 'named as mended');
    t.equal(report.danglingDbRecordsRemoved, 0, 'no file dropped');
    t.same(dbs.files.get(imageId), whole, 'the entry is as it was written');
    t.ok((await fileBytes(local, imageId))?.equals(fixture('cat.jpg')), 'the image reads back byte for byte');
    t.equal(local.store.getEvent(id)?.current_file_count, 1);
  });
}

t.test('a damaged blob under a whole entry is still dropped: its frame fails its own CRC', async (t) => {
  const local = await openLocalStore();
  t.teardown(local.close);
  const { image_ids: [imageId], id } = await local.create(imageEvent());
  const entry = local.store.getFile(imageId)!;
  const file = path.join(local.dataDir, 'blobs', segmentFileName(entry.segment));
  const bytes = fs.readFileSync(file);
  bytes[entry.offset + 10] ^= 0xff;
  fs.writeFileSync(file, bytes);

  const report = await local.lifecycle.checkConsistency();
  t.same(report.fileEntriesMended, [], 'nothing mended');
  t.equal(report.danglingDbRecordsRemoved, 1, 'the damaged file dropped');
  t.equal(local.store.getFile(imageId), undefined);
  t.equal(local.store.getEvent(id)?.current_file_count, 0);
});
