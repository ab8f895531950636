/** The auto-finalize sweep closes drafts older than DRAFT_AUTO_FINALIZE_SECONDS (docs/API.md, "Drafts and attachments"). */
import t from 'tap';
import { fixture, getJson, postJson, smallEvent } from './support/events.js';
import { postFile } from './support/multipart.js';
import { startStore } from './support/store-server.js';

t.test('an old draft is auto-finalized; finalize then reports auto_finalized_at', async (t) => {
  const store = await startStore({ DRAFT_AUTO_FINALIZE_SECONDS: '1' });
  t.teardown(store.stop);
  const { body: created } = await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }));
  const { body: finalizedAtOnce } = await postJson(`${store.url}/v2/events`, smallEvent());

  let event = (await getJson(`${store.url}/v2/events/${created.id}`)).body;
  for (let i = 0; i < 100 && event.auto_finalized_at === null; i++) {
    await new Promise((r) => setTimeout(r, 50));
    event = (await getJson(`${store.url}/v2/events/${created.id}`)).body;
  }
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

t.test('a draft younger than the delay stays open through sweeps', async (t) => {
  const store = await startStore({ DRAFT_AUTO_FINALIZE_SECONDS: '3' }); // a sweep every 1.5 s
  t.teardown(store.stop);
  const { body } = await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }));
  await new Promise((r) => setTimeout(r, 1700)); // at least one sweep has run
  const event = (await getJson(`${store.url}/v2/events/${body.id}`)).body;
  t.same([event.draft, event.finalized_at, event.auto_finalized_at], [true, null, null]);
});
