/**
 * The store reports what it writes (docs/OPERATIONS.md, "Disk writes"): /stats `disk_writes` and
 * /metrics count the request bodies of accepted creates and attachments exactly, take the bytes
 * written from /proc/self/io and from the data directory's block device, and give the write
 * amplification and bytes per event from them; a refused create counts for nothing.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import t from 'tap';
import { blockDeviceOf, deviceWrittenBytes } from '../src/operations/block-device.js';
import { DiskWrites, PER_DAY_AFTER_SECONDS } from '../src/operations/disk-writes.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { postFile } from './support/multipart.js';
import { startStore } from './support/store-server.js';

const DAY_MS = 86_400_000;

/** The value of the sample `name` as the exposition writes it. */
function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`no sample ${name}`);
  return Number(line.slice(name.length + 1));
}

t.test('bytes accepted are the bodies of accepted creates and attachments; written come from /proc/self/io and the data directory\'s device', async (t) => {
  // Read before the store starts: the store counts from its own start.
  const device = blockDeviceOf(os.tmpdir());
  const deviceBefore = device && deviceWrittenBytes(device.name);
  const store = await startStore({ CLEANUP_INTERVAL_SECONDS: '3600' });
  t.teardown(store.stop);
  t.same(blockDeviceOf(store.dataDir), device, 'the data directory is in the temporary directory');
  const before = (await getJson(`${store.url}/stats`)).body.disk_writes;
  t.same([before.bytes_accepted, before.events_accepted, before.write_amplification, before.bytes_written_per_event], [0, 0, null, null], 'nothing accepted yet');

  const bodies = [smallEvent(), imageEvent(), smallEvent({ draft: true })];
  const ids: string[] = [];
  for (const body of bodies) {
    const created = await postJson(`${store.url}/v2/events`, body);
    t.equal(created.status, 201);
    ids.push(created.body.id);
  }
  t.equal((await postJson(`${store.url}/v2/events`, { event_schema: 'custom' })).status, 422, 'a refused create');
  const video = fixture('cat-zoom.mp4');
  const attached = await postFile(`${store.url}/v2/events/${ids[2]}/videos`, video, { label: 'clip' });
  t.equal(attached.status, 201);

  const { disk_writes: writes } = (await getJson(`${store.url}/stats`)).body;
  const createBytes = bodies.reduce((sum, body) => sum + Buffer.byteLength(JSON.stringify(body)), 0);
  t.equal(writes.events_accepted, 3, 'three creates accepted; the refused one is not counted');
  t.ok(writes.bytes_accepted > createBytes + video.length, 'the create bodies and the whole multipart upload');
  t.ok(writes.bytes_accepted < createBytes + video.length + 1024, 'and only the multipart framing besides');
  t.equal(writes.source, '/proc/self/io write_bytes');
  t.ok(writes.bytes_written >= video.length, `the log's writes are counted (${writes.bytes_written} bytes)`);
  t.equal(writes.write_amplification, Number((writes.bytes_written / writes.bytes_accepted).toFixed(2)));
  t.equal(writes.bytes_written_per_event, Math.round(writes.bytes_written / 3));
  t.equal(writes.bytes_written_per_day, null, 'no day\'s figure in the first 10 minutes');

  if (!device) {
    t.equal(writes.device, null, `the data directory ${store.dataDir} has no block device of its own`);
  } else {
    const deviceAfter = deviceWrittenBytes(device.name)!;
    t.equal(writes.device.source, '/proc/diskstats sectors written');
    t.equal(writes.device.name, device.name);
    t.ok(writes.device.bytes_written >= video.length, `the video reached ${device.name} before its 201 (${writes.device.bytes_written} bytes)`);
    t.ok(writes.device.bytes_written <= deviceAfter - deviceBefore!, 'and the device wrote no more than it did while the store ran');
    t.equal(writes.device.write_amplification, Number((writes.device.bytes_written / writes.bytes_accepted).toFixed(2)));
    t.equal(writes.device.bytes_written_per_event, Math.round(writes.device.bytes_written / 3));
    t.equal(writes.device.bytes_written_per_day, null);
  }

  const metrics = await (await fetch(`${store.url}/metrics`)).text();
  t.equal(sample(metrics, 'edge_events_ingested_bytes_total'), writes.bytes_accepted, '/metrics counts the same bodies');
  t.ok(sample(metrics, 'edge_events_disk_written_bytes_total') >= writes.bytes_written, 'and the bytes written');
  t.ok(sample(metrics, 'edge_events_write_amplification_ratio') > 0);
  t.ok(sample(metrics, 'edge_events_disk_written_bytes_per_event') >= writes.bytes_written_per_event, 'the bytes per event, written no less since /stats');
  t.equal(sample(metrics, 'edge_events_disk_written_bytes_per_day'), 0, 'and no day\'s figure in the first 10 minutes');
  if (device) t.ok(sample(metrics, `edge_events_device_written_bytes_total{device="${device.name}"}`) >= writes.device.bytes_written, 'and the device\'s');
});

t.test('the block device under a directory is the one stat(1) and /sys name', async (t) => {
  const dir = t.testdir();
  const device = blockDeviceOf(dir);
  const majorMinor = execFileSync('stat', ['--format=%Hd:%Ld', dir], { encoding: 'utf8' }).trim();
  if (!fs.existsSync(`/sys/dev/block/${majorMinor}`)) {
    t.equal(device, null, `${dir} (${majorMinor}) is on no block device`);
  } else {
    t.equal(device?.majorMinor, majorMinor, 'major and minor decoded from st_dev');
    t.equal(fs.readFileSync(`/sys/class/block/${device!.name}/dev`, 'utf8').trim(), majorMinor, `${device!.name} is that device`);
    t.type(deviceWrittenBytes(device!.name), 'number', '/proc/diskstats has its line');
  }
  t.equal(blockDeviceOf('/dev/shm'), null, 'tmpfs has none');
  t.equal(deviceWrittenBytes('no-such-device'), undefined, 'a device /proc/diskstats does not list');
  t.equal(new DiskWrites('/dev/shm').report().device, null, 'so /stats reports device: null');
});

t.test('bytes a day are scaled from the time since the start, and only after the first 10 minutes', async (t) => {
  const dir = t.testdir();
  const writes = new DiskWrites(dir);
  const startedAt = Date.parse(writes.report().since);
  // O_SYNC: the block device has written it too before the reports read it.
  const fd = fs.openSync(`${dir}/written`, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_SYNC);
  fs.writeSync(fd, Buffer.alloc(64 * 1024, 1));
  fs.closeSync(fd);
  writes.accept(1000, 1);

  const early = writes.report(startedAt + (PER_DAY_AFTER_SECONDS - 1) * 1000);
  t.equal(early.bytes_written_per_day, null, 'none in the first 10 minutes');
  t.not(early.bytes_written_per_event, null, 'while the other figures are there at once');
  if (early.device) t.equal(early.device.bytes_written_per_day, null, 'nor for the device');

  const later = writes.report(startedAt + 2 * DAY_MS);
  t.ok(later.bytes_written! >= 64 * 1024, `the write counted (${later.bytes_written} bytes)`);
  t.equal(later.bytes_written_per_day, Math.round(later.bytes_written! / 2), 'two days after the start, half of what was written');
  if (later.device) t.equal(later.device.bytes_written_per_day, Math.round(later.device.bytes_written / 2), 'and the device\'s');
});
