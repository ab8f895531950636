/**
 * What the NATS sink's tests share (docs/OPERATIONS.md, "NATS JetStream"): the stream and bucket
 * the sink writes to by default, the checkpoint pace a sink test runs at, a create that must be
 * acknowledged, the sink's status, and the stream's messages read back.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { getJson, postJson } from './events.js';
import type { TestStore } from './store-server.js';

export const STREAM = 'EDGE_EVENTS';
export const BUCKET = 'edge-events-files';
/**
 * A sink sees an event once a checkpoint committed it, and with a sink the checkpoint waits
 * INDEX_CHECKPOINT_MS (docs/STORAGE.md, "When a checkpoint runs"): 50 ms here, not the default second.
 */
export const SHIPPING = { INDEX_CHECKPOINT_MS: '50' };

/** Creates `body` on `store`. @returns its id @throws Error when the create is not answered 201 */
export async function create(store: TestStore, body: Record<string, unknown>): Promise<string> {
  const res = await postJson(`${store.url}/v2/events`, body);
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

/** The store's NATS sink as /stats shows it. */
export const natsStatus = async (store: TestStore) => (await getJson(`${store.url}/stats`)).body.sinks.nats;

/** Every message of the stream: subject, `Nats-Msg-Id`, JSON. */
export async function streamMessages(jsm: JetStreamManager): Promise<{ subject: string; msgId: string | undefined; event: any }[]> {
  const { state } = await jsm.streams.info(STREAM);
  const messages = [];
  for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
    const message = await jsm.streams.getMessage(STREAM, { seq });
    if (message) messages.push({ subject: message.subject, msgId: message.header?.get('Nats-Msg-Id'), event: message.json() });
  }
  return messages;
}

/** A connection to the servers at `urls` that reconnects for ever, and its JetStream manager. */
export async function client(urls: string[]): Promise<{ nc: NatsConnection; jsm: JetStreamManager }> {
  const nc = await connect({ servers: urls, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  return { nc, jsm: await jetstreamManager(nc) };
}
