/**
 * Importing a consumed event (docs/OPERATIONS.md, "Hub mode"; src/hub/event-import.ts) into a
 * real store: device-side ids kept, idempotent by id, a file absent from the source waited for
 * or, at the last delivery, left out. The files come from a map of fixture bytes standing for
 * the fleet's bucket (the bucket itself is exercised in test/nats-hub.test.ts).
 */
import t from 'tap';
import { FileMissing, importEvent, type FileSource } from '../src/hub/event-import.js';
import { fixture, imageEvent } from './support/events.js';
import { openLocalStore } from './support/local-store.js';

/** A device's event as its store presents it (GET /v2/events/{id}). */
async function deviceEvent(): Promise<Record<string, any>> {
  const device = await openLocalStore();
  const { id } = await device.create(imageEvent({ images: [{ label: 'front', base64Image: fixture('cat.jpg').toString('base64'), inputBase64Image: fixture('rocket.jpg').toString('base64') }] }));
  const event = JSON.parse(device.store.getEventJson(id)!.toString('utf8'));
  await device.close();
  return event;
}

function source(files: Map<string, Buffer>): FileSource {
  return {
    bytes: async (fileId) => (files.has(fileId) ? { bytes: files.get(fileId)!, contentType: 'image/jpeg' } : null),
    chunks: async () => null,
  };
}

t.test('an imported event keeps its ids; importing it again changes nothing', async (t) => {
  const event = await deviceEvent();
  const [image] = event.images;
  const hub = await openLocalStore();
  t.teardown(hub.close);
  const files = source(new Map([[image.file_id, fixture('cat.jpg')], [image.input_file_id, fixture('rocket.jpg')]]));
  t.equal(await importEvent(hub.store, structuredClone(event), files, 'wait', 10_000), 'stored');
  const stored = JSON.parse(hub.store.getEventJson(event.id)!.toString('utf8'));
  t.same({ ...stored, created_at: 0, finalized_at: 0 }, { ...event, created_at: 0, finalized_at: 0 }, 'the same event but for created_at and finalized_at (the hub\'s)');
  t.same(await hub.store.openFile(image.file_id)!.readAll(), fixture('cat.jpg'));
  t.equal(await importEvent(hub.store, structuredClone(event), files, 'wait', 10_000), 'present');
  t.equal(hub.store.counters().events, 1);
});

t.test('a file not in the source: waited for (nothing stored), or at the last delivery left out', async (t) => {
  const event = await deviceEvent();
  const [image] = event.images;
  const hub = await openLocalStore();
  t.teardown(hub.close);
  const onlyInput = source(new Map([[image.input_file_id, fixture('rocket.jpg')]]));
  await t.rejects(importEvent(hub.store, structuredClone(event), onlyInput, 'wait', 10_000), new FileMissing(image.file_id));
  t.equal(hub.store.getEvent(event.id), undefined, 'nothing stored');
  t.equal(await importEvent(hub.store, structuredClone(event), onlyInput, 'skip', 10_000), 'stored');
  const stored = hub.store.getEvent(event.id)!;
  t.equal(stored.images[0]!.file_id, null, 'stored without the missing image');
  t.equal(stored.images[0]!.input_file_id, image.input_file_id);
});
