/** Two-step reset (docs/API.md, "Cleanup and reset"). */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ResetTokens } from '../src/operations/reset.js';
import { responseProblems } from './support/response-shapes.js';
import { getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { startStore } from './support/store-server.js';

t.test('request then confirm deletes every event and file; tokens are single-use', async (t) => {
  const store = await startStore({ API_KEY: 'k' });
  t.teardown(store.stop);
  const key = { 'x-api-key': 'k' };
  const created = (await postJson(`${store.url}/v2/events`, imageEvent(), key)).body;

  t.equal((await postJson(`${store.url}/reset/request`, '')).status, 401, 'the key is needed to ask');
  const issued = await postJson(`${store.url}/reset/request`, '', key);
  t.equal(issued.status, 200);
  t.same(responseProblems('reset-token', issued.body), []);
  t.equal(issued.body.expires_in_seconds, 60);

  t.equal((await postJson(`${store.url}/reset/confirm`, { reset_token: issued.body.reset_token })).status, 401, 'and to confirm');
  for (const body of [{}, { reset_token: 'wrong' }, { reset_token: 42 }, '']) {
    t.equal((await postJson(`${store.url}/reset/confirm`, body, key)).status, 400, `refused: ${JSON.stringify(body)}`);
  }
  t.equal((await getJson(`${store.url}/v2/events/${created.id}`, key)).status, 200, 'a refused confirm deletes nothing');

  const confirmed = await postJson(`${store.url}/reset/confirm`, { reset_token: issued.body.reset_token }, key);
  t.equal(confirmed.status, 200);
  t.same(responseProblems('reset-confirm', confirmed.body), []);
  t.equal((await getJson(`${store.url}/v2/events/${created.id}`, key)).status, 404);
  t.equal((await fetch(`${store.url}/images/${created.image_ids[0]}`, { headers: key })).status, 404);
  const stats = (await getJson(`${store.url}/stats`, key)).body.current;
  t.same([stats.total_events, stats.total_images, stats.draft_events], [0, 0, 0], 'counters zeroed');
  t.same(fs.readdirSync(path.join(store.dataDir, 'blobs')), [], 'no segment left');
  t.equal((await postJson(`${store.url}/reset/confirm`, { reset_token: issued.body.reset_token }, key)).status, 400, 'a used token is refused');

  const after = await postJson(`${store.url}/v2/events`, imageEvent(), key);
  t.equal(after.status, 201, 'the store takes events again');
  t.equal((await fetch(`${store.url}/images/${after.body.image_ids[0]}`, { headers: key })).status, 200);
});

t.test('a reset racing creates leaves counts that match the records', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  for (let i = 0; i < 20; i++) await postJson(`${store.url}/v2/events`, smallEvent());
  const { reset_token } = (await postJson(`${store.url}/reset/request`, '')).body;
  const creates = Array.from({ length: 100 }, () => postJson(`${store.url}/v2/events`, imageEvent()));
  const confirm = postJson(`${store.url}/reset/confirm`, { reset_token });
  const results = await Promise.all(creates);
  t.equal((await confirm).status, 200);
  t.ok(results.every((r) => r.status === 201), 'every create acknowledged');
  const listed = (await getJson(`${store.url}/v2/events?limit=1000`)).body.events;
  const stats = (await getJson(`${store.url}/stats`)).body.current;
  t.equal(stats.total_events, listed.length, 'event counter matches the records');
  t.equal(stats.total_images, listed.length, 'image counter matches the records');
  for (const event of listed) {
    const image = await fetch(`${store.url}/images/${event.images[0].file_id}`);
    t.equal(image.status, 200, 'every surviving event has its image');
    await image.arrayBuffer();
  }
});

t.test('tokens expire after 60 seconds', async (t) => {
  let now = 0;
  const tokens = new ResetTokens(() => now);
  const { reset_token } = tokens.issue();
  now = 59_999;
  const second = tokens.issue().reset_token;
  t.doesNotThrow(() => tokens.consume(second), 'valid within 60 s');
  now = 60_000;
  t.throws(() => tokens.consume(reset_token), { name: 'AppError', message: /reset token/ }, 'expired at 60 s');
});
