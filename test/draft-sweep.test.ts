/**
 * The auto-finalize sweep closes drafts older than DRAFT_AUTO_FINALIZE_SECONDS (docs/API.md,
 * "Drafts and attachments"): once over HTTP with the lifecycle worker's own timer and clock, then
 * sweepDrafts itself, handed its cutoff.
 */
import t from 'tap';
import { createEvent } from '../src/events/create-event.js';
import { sweepDrafts } from '../src/lifecycle/draft-sweeper.js';
import { fixture, getJson, postJson, smallEvent } from './support/events.js';
import { openLocalStore } from './support/local-store.js';
import { postFile } from './support/multipart.js';
import { startStore } from './support/store-server.js';
import { until } from './support/waiting.js';

t.test('an old draft is auto-finalized; finalize then reports auto_finalized_at', async (t) => {
  const store = await startStore({ DRAFT_AUTO_FINALIZE_SECONDS: '1' });
  t.teardown(store.stop);
  const { body: created } = await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }));
  const { body: finalizedAtOnce } = await postJson(`${store.url}/v2/events`, smallEvent());

  await until('the sweep finalized the draft', async () => (await getJson(`${store.url}/v2/events/${created.id}`)).body.auto_finalized_at !== null);
  const event = (await getJson(`${store.url}/v2/events/${created.id}`)).body;
  t.not(event.auto_finalized_at, null, 'auto_finalized_at set');
  t.equal(event.finalized_at, event.auto_finalized_at, 'finalized_at set with it');
  t.equal(event.draft, false);
  const ageMs = (Date.parse(event.finalized_at) - Date.parse(event.created_at));
  t.ok(ageMs >= 1000, `closed after the delay (${ageMs} ms)`);

  const finalize = await postJson(`${store.url}/v2/events/${created.id}/finalize`, '');
  t.same([finalize.body.already_finalized, finalize.body.auto_finalized_at, finalize.body.finalized_at], [true, event.auto_finalized_at, event.finalized_at]);
  t.equal((await postFile(`${store.url}/v2/events/${created.id}/videos`, fixture('cat-zoom.mp4'))).status, 409, 'closed to attachments');
  const other = (await getJson(`${store.url}/v2/events/${finalizedAtOnce.id}`)).body;
  t.equal(other.auto_finalized_at, null, 'events finalized on creation are not touched');
});

t.test('the sweep closes exactly the drafts created before its cutoff', async (t) => {
  // sweepDrafts is handed its cutoff (the worker passes now minus DRAFT_AUTO_FINALIZE_SECONDS):
  // a draft's age is set by moving the cutoff, not by waiting.
  const local = await openLocalStore();
  t.teardown(local.close);
  const drafts = [];
  for (let i = 0; i < 3; i++) drafts.push(await local.create(smallEvent({ draft: true })));
  const finalized = await local.create(smallEvent());
  const younger = await local.create(smallEvent({ draft: true }));
  const at = drafts.map((d) => local.createdAt(d.id));
  const state = (id: string) => {
    const record = local.store.getEvent(id)!;
    return { draft: record.draft, closed: record.finalized_at !== null, auto: record.auto_finalized_at !== null };
  };
  const open = { draft: true, closed: false, auto: false };
  const autoClosed = { draft: false, closed: true, auto: true };

  t.equal(await sweepDrafts(local.store, at[0] - 1_000_000), 0, 'a cutoff before every draft closes none');
  t.equal(await sweepDrafts(local.store, at[0]), 0, 'a draft created exactly at the cutoff is not yet due');
  t.same(drafts.map((d) => state(d.id)), [open, open, open]);
  t.equal(await sweepDrafts(local.store, at[0] + 1), 1, 'one microsecond later it is');
  t.same(drafts.map((d) => state(d.id)), [autoClosed, open, open]);
  const first = local.store.getEvent(drafts[0].id)!;
  t.equal(first.finalized_at, first.auto_finalized_at, 'finalized_at and auto_finalized_at are the same moment');
  t.ok(first.finalized_at! >= at[0], 'not before the draft was created');

  t.equal(await sweepDrafts(local.store, local.createdAt(younger.id)), 2, 'the other two old drafts, not the younger one');
  t.same([...drafts.map((d) => state(d.id)), state(younger.id)], [autoClosed, autoClosed, autoClosed, open]);
  t.same(state(finalized.id), { draft: false, closed: true, auto: false }, 'an event finalized on creation is not touched');
  t.equal(await sweepDrafts(local.store, local.createdAt(younger.id)), 0, 'the same cutoff again closes nothing');
  t.equal(await sweepDrafts(local.store, Number.MAX_SAFE_INTEGER), 1, 'a cutoff after every draft closes the rest');
  t.same(state(younger.id), autoClosed);
  t.equal(local.store.counters().drafts, 0, 'the drafts counter follows');
});

t.test('a draft still in the head is closed too', async (t) => {
  // The drafts index is LMDB's; a slowly filling head waits up to a minute for its checkpoint
  // (docs/STORAGE.md, "When a checkpoint runs"), so the sweep checkpoints the head first.
  const local = await openLocalStore();
  t.teardown(local.close);
  const draft = await createEvent(local.store, local.config, smallEvent({ draft: true }));
  t.equal(await sweepDrafts(local.store, Number.MAX_SAFE_INTEGER), 1, 'the sweep closed it');
  t.not(local.store.getEvent(draft.id)!.auto_finalized_at, null);
});
