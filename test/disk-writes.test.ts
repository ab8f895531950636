/**
 * The store reports what it writes (docs/OPERATIONS.md, "Disk writes"): /stats `disk_writes` and
 * /metrics count the request bodies of accepted creates and attachments exactly, take the bytes
 * written from /proc/self/io and from the data directory's block device, count the one-time
 * writes before the measurement began (start-up's own, the first event's append) apart, and give
 * the write amplification, bytes per event and bytes a day over the measurement only once it
 * holds 10 minutes and 1,000 events; a refused create counts for nothing.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import t from 'tap';
import { blockDeviceOf, deviceWrittenBytes } from '../src/operations/block-device.js';
import { DiskWrites, MEASURE_MIN_EVENTS, MEASURE_MIN_SECONDS } from '../src/operations/disk-writes.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { postFile } from './support/multipart.js';
import { startStore } from './support/store-server.js';
import { until } from './support/waiting.js';

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
  t.same([before.measuring, before.measured_since, before.measured_events], [true, null, 0], 'nor measured');
  // The measurement begins at the first event after start-up's own writes: its cleanup, the disk reserve.
  await until('the start-up cleanup ran', async () => (await getJson(`${store.url}/stats`)).body.last_cleanup !== null);

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
  t.ok(writes.one_time_bytes_written > 0 && writes.one_time_bytes_written <= writes.bytes_written - video.length,
    `one-time writes, before the first event's 201, apart: ${writes.one_time_bytes_written} of ${writes.bytes_written} bytes, the video's after`);
  t.ok(Date.parse(writes.measured_since) >= Date.parse(writes.since), `measured since the first create: ${writes.measured_since}`);
  t.equal(writes.measured_events, 2, 'the events after it');
  t.equal(writes.measuring, true, 'still measuring: too few events and minutes to divide');
  t.same([writes.write_amplification, writes.bytes_written_per_event, writes.bytes_written_per_day], [null, null, null], 'so no figure per event, per day or over accepted');

  if (!device) {
    t.equal(writes.device, null, `the data directory ${store.dataDir} has no block device of its own`);
  } else {
    const deviceAfter = deviceWrittenBytes(device.name)!;
    t.equal(writes.device.source, '/proc/diskstats sectors written');
    t.equal(writes.device.name, device.name);
    t.ok(writes.device.bytes_written >= video.length, `the video reached ${device.name} before its 201 (${writes.device.bytes_written} bytes)`);
    t.ok(writes.device.bytes_written <= deviceAfter - deviceBefore!, 'and the device wrote no more than it did while the store ran');
    t.ok(writes.device.one_time_bytes_written <= writes.device.bytes_written, 'the device\'s one-time writes apart too');
    t.same([writes.device.write_amplification, writes.device.bytes_written_per_event, writes.device.bytes_written_per_day], [null, null, null], 'and no figure yet');
  }

  const metrics = await (await fetch(`${store.url}/metrics`)).text();
  t.equal(sample(metrics, 'edge_events_ingested_bytes_total'), writes.bytes_accepted, '/metrics counts the same bodies');
  t.ok(sample(metrics, 'edge_events_disk_written_bytes_total') >= writes.bytes_written, 'and the bytes written');
  t.equal(sample(metrics, 'edge_events_disk_written_one_time_bytes'), writes.one_time_bytes_written, 'the one-time writes');
  for (const name of ['write_amplification_ratio', 'disk_written_bytes_per_event', 'disk_written_bytes_per_day']) t.equal(sample(metrics, `edge_events_${name}`), 0, `${name} 0 while measuring`);
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

t.test('one-time writes apart, then no figure per event, per day or over accepted until the measurement holds 10 minutes and 1,000 events', async (t) => {
  const dir = t.testdir();
  let startUpDone = false;
  const writes = new DiskWrites(dir, () => startUpDone);
  // O_SYNC: the block device has written it too before the reports read it.
  const write = (name: string, bytes: number) => {
    const fd = fs.openSync(`${dir}/${name}`, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_SYNC);
    fs.writeSync(fd, Buffer.alloc(bytes, 1));
    fs.closeSync(fd);
  };
  write('start-up', 256 * 1024); // start-up's own, as the disk reserve
  writes.accept(1000, 1); // before start-up is done: one-time, not the measurement's start
  t.same([writes.report().measured_since, writes.report().one_time_bytes_written! >= 256 * 1024], [null, true], 'an event during start-up begins nothing; all so far is one-time');

  startUpDone = true;
  writes.accept(1000, 1); // the first event after start-up: the measurement begins
  const oneTime = writes.report().one_time_bytes_written!;
  const begun = Date.parse(writes.report().measured_since!);
  t.ok(oneTime >= 256 * 1024, `one-time: ${oneTime} bytes`);
  write('events', 512 * 1024);
  for (let n = 0; n < MEASURE_MIN_EVENTS - 1; n++) writes.accept(500, 1);

  const few = writes.report(begun + 2 * MEASURE_MIN_SECONDS * 1000);
  t.same([few.measured_events, few.measuring, few.bytes_written_per_event, few.bytes_written_per_day, few.write_amplification], [MEASURE_MIN_EVENTS - 1, true, null, null, null], 'one event short of 1,000: measuring');
  writes.accept(500, 1);
  const early = writes.report(begun + (MEASURE_MIN_SECONDS - 1) * 1000);
  t.same([early.measured_events, early.measuring, early.bytes_written_per_day], [MEASURE_MIN_EVENTS, true, null], '1,000 events in under 10 minutes: measuring');
  if (early.device) t.equal(early.device.bytes_written_per_event, null, 'the device\'s likewise');

  const later = writes.report(begun + 2 * DAY_MS);
  const measured = later.bytes_written! - oneTime;
  t.equal(later.measuring, false, 'two days and 1,000 events: measured');
  t.equal(later.one_time_bytes_written, oneTime, 'the one-time writes stay what they were');
  t.ok(measured >= 512 * 1024, `the events' writes measured (${measured} bytes)`);
  t.equal(later.bytes_written_per_event, Math.round(measured / MEASURE_MIN_EVENTS), 'per event: the measurement\'s bytes over its events, without the one-time writes');
  t.equal(later.bytes_written_per_day, Math.round(measured / 2), 'a day: half of the two days\' bytes');
  t.equal(later.write_amplification, Number((measured / (500 * MEASURE_MIN_EVENTS)).toFixed(2)), 'over the bodies accepted since it began');
  if (later.device) {
    const deviceMeasured = later.device.bytes_written - later.device.one_time_bytes_written;
    t.ok(later.device.one_time_bytes_written >= 256 * 1024, 'the device\'s one-time writes hold start-up\'s');
    t.equal(later.device.bytes_written_per_day, Math.round(deviceMeasured / 2), 'and its bytes a day');
  }
});
