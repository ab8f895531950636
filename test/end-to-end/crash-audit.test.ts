/**
 * The harnesses' audit of acknowledged removals (scripts/lib/crash-audit.ts, crash-writers.ts)
 * against a real store: an event listed after its reset or deletion was acknowledged is a
 * finding, an event in flight during a reset may be gone, and the writers' reset and deletion
 * loops leave a store whose audit finds nothing.
 */
import t, { type Test } from 'tap';
import { auditStore } from '../../scripts/lib/crash-audit.js';
import { Ledger, type SentEvent } from '../../scripts/lib/crash-ledger.js';
import { CrashWriters } from '../../scripts/lib/crash-writers.js';
import { fixtureBase64 } from '../../scripts/lib/fixtures.js';
import { StoreClient } from '../../scripts/lib/http-client.js';
import { Random } from '../../scripts/lib/random.js';
import { startStore, type TestStore } from '../support/store-server.js';
import { until } from '../support/waiting.js';

/** Creates one image event through the API and enters it in `ledger` as acknowledged. */
async function created(t: Test, client: StoreClient, ledger: Ledger): Promise<SentEvent> {
  const token = ledger.token('e');
  const event: SentEvent = {
    token,
    fields: {
      device_id: 'cam-0', workflow_id: 'wf-0', inference_timestamp: '2026-12-01T00:00:00.000Z',
      event_schema: 'custom', event_data: { value: 'v' }, custom_metadata: { token },
    },
    images: [{ fixture: 'cat.jpg', label: 'view-0', detections: [] }],
    draft: false, outcome: 'unknown', seen: false, finalize: 'none', seenFinalized: false, attachments: [],
  };
  ledger.add(event);
  const images = [{ label: 'view-0', base64_image: fixtureBase64('cat.jpg'), object_detections: [], classifications: [] }];
  const answer = await client.request('POST', '/v2/events', { json: { ...event.fields, images } });
  t.equal(answer.status, 201, `create ${token}`);
  const body = answer.json();
  Object.assign(event, { outcome: 'acked', storedBy: ledger.now(), id: body.id, createdAt: body.created_at, imageIds: body.image_ids });
  return event;
}

async function reset(t: Test, client: StoreClient): Promise<void> {
  const token = (await client.request('POST', '/reset/request')).json().reset_token;
  t.equal((await client.request('POST', '/reset/confirm', { json: { reset_token: token } })).status, 200, 'reset');
}

async function store(t: Test, env: Record<string, string> = {}): Promise<{ running: TestStore; client: StoreClient }> {
  const running = await startStore(env);
  t.teardown(() => running.stop());
  return { running, client: new StoreClient(running.url) };
}

t.test('an event listed after its acknowledged reset is corrupt; once the store is reset, the removal is checked', async (t) => {
  const { running, client } = await store(t);
  const ledger = new Ledger();
  const before = await created(t, client, ledger);
  ledger.resetAnswered(ledger.resetSent(), 'acked');

  let found = await auditStore(client, ledger, running.dataDir, new Random(1));
  t.match(found.corrupt, [new RegExp(`^event ${before.id} \\(${before.token}\\): its removal \\(reset\\) was acknowledged, yet it is listed again`)]);

  await reset(t, client);
  const after = await created(t, client, ledger);
  found = await auditStore(client, ledger, running.dataDir, new Random(1));
  t.same([found.lostEvents, found.corrupt, found.inconsistent], [[], [], []]);
  t.equal(found.removalsChecked, 1);
  t.equal(found.eventsChecked, 1, `only ${after.token} is listed`);
});

t.test('an event in flight during an acknowledged reset may be gone; one stored before a refused reset may not', async (t) => {
  const { running, client } = await store(t);
  const ledger = new Ledger();
  const kept = await created(t, client, ledger);
  ledger.resetAnswered(ledger.resetSent(), 'refused');
  const sentAt = ledger.resetSent();
  const inFlight = await created(t, client, ledger);
  ledger.resetAnswered(sentAt, 'acked');
  t.equal(inFlight.mayBeReset, true);
  t.notOk(ledger.events.has(kept.token), 'stored before the acknowledged reset: removed');

  await reset(t, client);
  const found = await auditStore(client, ledger, running.dataDir, new Random(1));
  t.same([found.lostEvents, found.corrupt], [[], []]);
  t.equal(found.goneWithReset, 1);
  t.equal(found.removalsChecked, 1);

  const refusedOnly = new Ledger();
  const stays = await created(t, client, refusedOnly);
  refusedOnly.resetAnswered(refusedOnly.resetSent(), 'refused');
  await reset(t, client);
  const lost = await auditStore(client, refusedOnly, running.dataDir, new Random(1));
  t.same(lost.lostEvents, [`event ${stays.id}: not listed`], 'a refused reset removed nothing: the event must be there');
});

t.test('an event listed after its deletion was acknowledged is corrupt', async (t) => {
  const { running, client } = await store(t);
  const ledger = new Ledger();
  const event = await created(t, client, ledger);
  ledger.deletionAcknowledged(event);
  const found = await auditStore(client, ledger, running.dataDir, new Random(1));
  t.match(found.corrupt, [/its removal \(deleted by cleanup\) was acknowledged, yet it is listed again/]);
  t.equal(ledger.tally().deletionsAcked, 1);
});

t.test('the writers reset the store and have a record cap\'s deletions acknowledged; the audit then finds nothing', async (t) => {
  const cap = 20;
  const { running, client } = await store(t, { MAX_RECORDS: String(cap), CLEANUP_INTERVAL_SECONDS: '1', DRAFT_AUTO_FINALIZE_SECONDS: '86400' });
  const ledger = new Ledger();
  const writers = new CrashWriters(client, ledger, new Random(20261201), { recordCap: true, resetEveryMs: 1500 });
  writers.start(2, 1);
  await until('two resets and five deletions acknowledged', () => {
    const tally = ledger.tally();
    return tally.resets >= 2 && tally.deletionsAcked >= 5;
  }, 90_000);
  await writers.stop();
  t.same(writers.unexpected, [], 'every answer was one the writers expect');

  const found = await auditStore(client, ledger, running.dataDir, new Random(1), { recordCap: cap });
  t.same([found.lostEvents, found.lostFiles, found.corrupt, found.inconsistent], [[], [], [], []]);
  t.ok(found.removalsChecked >= 5, `${found.removalsChecked} acknowledged removals checked absent`);
  t.ok(found.eventsChecked > 0, `${found.eventsChecked} events checked`);
});
