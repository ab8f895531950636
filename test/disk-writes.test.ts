/**
 * The store reports what it writes (docs/OPERATIONS.md, "Disk writes"): /stats `disk_writes` and
 * /metrics count the request bodies of accepted creates and attachments exactly, take the bytes
 * written from /proc/self/io, and give the write amplification and bytes per event from them;
 * a refused create counts for nothing.
 */
import t from 'tap';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { postFile } from './support/multipart.js';
import { startStore } from './support/store-server.js';

/** The value of the sample `name` as the exposition writes it. */
function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`no sample ${name}`);
  return Number(line.slice(name.length + 1));
}

t.test('bytes accepted are the bodies of accepted creates and attachments; written come from /proc/self/io', async (t) => {
  const store = await startStore({ CLEANUP_INTERVAL_SECONDS: '3600' });
  t.teardown(store.stop);
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
  t.ok(writes.bytes_written_per_day >= writes.bytes_written, 'a day is longer than the test');

  const metrics = await (await fetch(`${store.url}/metrics`)).text();
  t.equal(sample(metrics, 'edge_events_ingested_bytes_total'), writes.bytes_accepted, '/metrics counts the same bodies');
  t.ok(sample(metrics, 'edge_events_disk_written_bytes_total') >= writes.bytes_written, 'and the bytes written');
  t.ok(sample(metrics, 'edge_events_write_amplification_ratio') > 0);
});
