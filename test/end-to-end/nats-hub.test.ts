/**
 * Hub mode (docs/OPERATIONS.md, "Hub mode") against a real nats-server: two device stores ship
 * through their JetStream sinks; a hub store (a real process) consumes the stream, is killed with
 * SIGKILL mid-consume and started again; afterwards every event is on the hub once, with its
 * device-side ids and byte-identical images and videos. Skipped, with the reason, only where
 * nats-server is absent.
 */
import t from 'tap';
import { launchStore, type StoreProcess } from '../../scripts/lib/store-process.js';
import { fixture, getJson, imageEvent, postJson } from '../support/events.js';
import { postFile } from '../support/multipart.js';
import { startNatsServer } from '../support/nats-server.js';
import { startStore, tempDataDir, type TestStore } from '../support/store-server.js';
import { until } from '../support/waiting.js';

const PER_DEVICE = 40;

async function create(store: TestStore, body: Record<string, unknown>): Promise<string> {
  const res = await postJson(`${store.url}/v2/events`, body);
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

const bytesOf = async (url: string) => Buffer.from(await (await fetch(url)).arrayBuffer());
const totalEvents = async (url: string) => (await getJson(`${url}/stats`)).body.current.total_events as number;

/** The fields an event keeps from its device to the hub (created_at and finalized_at are each store's own). */
function kept(event: Record<string, any>) {
  const { created_at: _created, finalized_at: _finalized, ...rest } = event;
  return rest;
}

t.test('a hub consumes two devices\' events, is killed mid-consume and restarted: every event once, files byte-identical', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const devices = [await startStore({ NATS_URL: server.url }), await startStore({ NATS_URL: server.url })];
  t.teardown(() => Promise.all(devices.map((device) => device.stop())));

  const shipped: { device: TestStore; id: string }[] = [];
  for (let i = 0; i < PER_DEVICE; i++) {
    shipped.push({ device: devices[0]!, id: await create(devices[0]!, imageEvent({ deviceId: 'cam-a', images: [{ label: 'front', base64Image: fixture('cat.jpg').toString('base64'), inputBase64Image: fixture('rocket.jpg').toString('base64'), objectDetections: [{ class: 'cat', x: 225, y: 150, width: 200, height: 180, confidence: 0.9 }] }] })) });
    shipped.push({ device: devices[1]!, id: await create(devices[1]!, imageEvent({ deviceId: 'cam-b' }, 'camera.jpg')) });
  }
  const withVideo = await create(devices[0]!, imageEvent({ deviceId: 'cam-a', draft: true }, 'retina.jpg'));
  const video = await postFile(`${devices[0]!.url}/v2/events/${withVideo}/videos`, fixture('cat-zoom.mp4'), { label: 'clip' }, 'video/mp4');
  t.equal(video.status, 201);
  t.equal((await postJson(`${devices[0]!.url}/v2/events/${withVideo}/finalize`, {})).status, 200);
  shipped.push({ device: devices[0]!, id: withVideo });
  for (const device of devices) await until('the device shipped everything', async () => (await getJson(`${device.url}/stats`)).body.sinks.nats.backlog_events === 0);

  const hubDir = tempDataDir();
  const hubEnv = { NATS_SOURCE_URL: server.url, DATA_DIR: hubDir };
  let hub: StoreProcess = await launchStore(hubEnv);
  t.teardown(() => hub.kill());
  await until('the hub under way', async () => (await totalEvents(hub.url)) >= 10, 60_000, 5);
  await hub.kill('SIGKILL');
  const atKill = await (async () => {
    const restarted = await launchStore(hubEnv);
    hub = restarted;
    return totalEvents(restarted.url);
  })();
  t.ok(atKill < shipped.length, `killed mid-consume (${atKill} of ${shipped.length} stored when it restarted)`);
  await until('every event on the hub', async () => (await totalEvents(hub.url)) === shipped.length, 60_000);

  let imagesCompared = 0;
  for (const { device, id } of shipped) {
    const there = (await getJson(`${device.url}/v2/events/${id}`)).body;
    const here = await getJson(`${hub.url}/v2/events/${id}`);
    t.equal(here.status, 200, `event ${id} on the hub`);
    t.same(kept(here.body), kept(there), 'the same event: its id, file ids, results, metadata');
    for (const image of there.images) {
      for (const fileId of [image.file_id, image.input_file_id].filter(Boolean)) {
        t.same(await bytesOf(`${hub.url}/images/${fileId}`), await bytesOf(`${device.url}/images/${fileId}`), 'image bytes identical');
        imagesCompared++;
      }
    }
  }
  t.ok(imagesCompared >= shipped.length, `${imagesCompared} image files compared byte for byte`);
  t.same(await bytesOf(`${hub.url}/videos/${video.body.file_id}`), fixture('cat-zoom.mp4'), 'the video, byte-identical');
  const byDevice = (await getJson(`${hub.url}/events/count/stats?device_id=cam-a`)).body;
  t.equal(byDevice.filtered_count, PER_DEVICE + 1, 'none twice');
});
