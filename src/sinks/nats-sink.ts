/**
 * The NATS JetStream sink (docs/OPERATIONS.md, "NATS JetStream"), run by the lifecycle worker
 * over the shipping ledger like the cloud uploader (src/lifecycle/sink-runner.ts). For each
 * finalized event, in ledger order: its images and videos go to the object store bucket under
 * their file ids, then the event's JSON (as `GET /v2/events/{id}` returns it) is published to
 * `<NATS_SUBJECT_PREFIX>.<device_id>.<event_schema>` with `Nats-Msg-Id: <event id>`. A batch
 * counts as shipped once JetStream acknowledged every publish; a batch shipped again after a
 * crash or a failure is de-duplicated by the stream (its duplicate window), and an object already
 * stored whole is not put again. Local-only files never leave the device.
 *
 * The stream and the bucket are created only when absent (file storage); found, they are used as
 * they are, never reconfigured. The connection retries for ever (nats-connection.ts); while the
 * server is away, a batch fails and is shipped again.
 */
import { InvalidArgumentError, nanos, type NatsConnection } from '@nats-io/transport-node';
import { JetStreamApiCodes, JetStreamApiError, StorageType, jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { Objm, type ObjectStore } from '@nats-io/obj';
import pLimit from 'p-limit';
import type { Config } from '../config.js';
import type { Outgoing, Sink } from './ledger-sink.js';
import type { Logger } from '../logger.js';
import { type EventRecord, fileIdsOf, type StoreView } from '../store/index.js';
import { connectNats } from './nats-connection.js';
import { NATS_RESERVED, subjectToken } from './subject-tokens.js';

/** Most events per batch: their publishes are in flight together. */
const BATCH_EVENTS = 100;
/** Files put at once: each put is a few round trips, so a batch's puts overlap. */
const FILE_PUTS = 32;
/** Longest wait for one publish's acknowledgement (ms); then the batch is shipped again. */
const PUBLISH_TIMEOUT_MS = 10_000;
/** The duplicate window of a stream the sink creates: a batch shipped again within it is stored once. */
const DUPLICATE_WINDOW_MS = 10 * 60_000;

/** The settings the sink reads. */
export type NatsSettings = Pick<Config, 'natsServers' | 'natsCreds' | 'natsStream' | 'natsSubjectPrefix' | 'natsObjectBucket' | 'natsReplicas' | 'natsMaxAgeSeconds' | 'natsMaxBytes'>;

interface Connected {
  nc: NatsConnection;
  js: JetStreamClient;
  bucket: ObjectStore;
}

/** The subject of an event's message: `<prefix>.<device_id>.<event_schema>`, each value one token. */
export function eventSubject(prefix: string, record: Pick<EventRecord, 'device_id' | 'event_schema'>): string {
  return `${prefix}.${subjectToken(record.device_id, NATS_RESERVED)}.${subjectToken(record.event_schema, NATS_RESERVED)}`;
}

export class NatsSink implements Sink {
  readonly name = 'nats';
  readonly batchSize = BATCH_EVENTS;
  private connection: Promise<Connected> | undefined;
  /** The last ledger seq a batch tried since start (undefined: none yet). */
  private lastAttempted: number | undefined;

  constructor(private readonly store: StoreView, private readonly settings: NatsSettings, private readonly log: Logger) {}

  /**
   * Stores the events' images and videos, then publishes the events and waits for every ack.
   * @returns created_at of the events JetStream can never take (larger than the server's max_payload)
   * @throws when the batch must be shipped again: the server away, a publish not acknowledged in
   *   time, `signal` aborted
   */
  async ship(events: Outgoing[], signal: AbortSignal): Promise<number[]> {
    const { js, bucket } = await unlessAborted(this.connected(), signal);
    // Re-shipped (a failure, or a restart): objects already stored whole are not put again.
    const again = this.lastAttempted !== undefined && events[0]!.seq <= this.lastAttempted;
    this.lastAttempted = events[events.length - 1]!.seq;
    // Every file of the batch is put, FILE_PUTS at a time; each event is published, in ledger
    // order, once its own files are stored; the acks are awaited together.
    const put = pLimit(FILE_PUTS);
    const stored = events.map(({ record }) => Promise.all(fileIdsOf(record).map((fileId) => put(() => this.putFile(bucket, fileId, again)))));
    for (const done of stored) done.catch(() => undefined); // awaited in order below
    const refused: number[] = [];
    const acks: Promise<unknown>[] = [];
    for (const [i, { createdAt, record }] of events.entries()) {
      await unlessAborted(stored[i]!, signal);
      const json = this.store.getEventJson(record.id);
      if (!json) continue; // deleted since: nothing to publish
      const publish = js.publish(eventSubject(this.settings.natsSubjectPrefix, record), json, { msgID: record.id, timeout: PUBLISH_TIMEOUT_MS });
      acks.push(publish.catch((err: unknown) => {
        if (!(err instanceof InvalidArgumentError)) throw err;
        this.log.error({ err, eventId: record.id, bytes: json.length }, 'event larger than the NATS server takes; dead-lettered');
        refused.push(createdAt);
      }));
    }
    await unlessAborted(Promise.all(acks), signal);
    return refused;
  }

  /** Closes the connection, after what is in flight (the worker stopping). */
  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    if (connection) await connection.then(({ nc }) => nc.close(), () => undefined);
  }

  /**
   * Puts file `fileId` in the bucket; with `unlessStored`, not when it is there whole already.
   * A file gone from the store (deleted) or local-only is passed.
   */
  private async putFile(bucket: ObjectStore, fileId: string, unlessStored: boolean): Promise<void> {
    const file = this.store.openFile(fileId);
    if (!file || file.kind === 'local_only') return;
    if (unlessStored) {
      const stored = await bucket.info(fileId);
      if (stored && !stored.deleted && stored.size === file.size) return;
    }
    await bucket.put({ name: fileId, description: file.contentType }, file.stream());
  }

  /** The connection, its JetStream client and the bucket, the stream and bucket made when absent. */
  private connected(): Promise<Connected> {
    this.connection ??= this.open().catch((err: unknown) => {
      this.connection = undefined;
      throw err;
    });
    return this.connection;
  }

  private async open(): Promise<Connected> {
    const { natsServers, natsCreds, natsStream, natsSubjectPrefix, natsObjectBucket, natsReplicas, natsMaxAgeSeconds, natsMaxBytes } = this.settings;
    // Limits of what the sink creates: 0 is "none" in JetStream's max_age; -1 in its max_bytes.
    const limits = { num_replicas: natsReplicas, max_age: nanos(natsMaxAgeSeconds * 1000), max_bytes: natsMaxBytes === 0 ? -1 : natsMaxBytes };
    const nc = await connectNats(natsServers, natsCreds, 'edge-event-store sink');
    try {
      const jsm = await jetstreamManager(nc);
      try {
        await jsm.streams.info(natsStream);
      } catch (err) {
        if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
        // The duplicate window may not be longer than the stream keeps messages.
        const window = natsMaxAgeSeconds === 0 ? DUPLICATE_WINDOW_MS : Math.min(DUPLICATE_WINDOW_MS, natsMaxAgeSeconds * 1000);
        await jsm.streams.add({ name: natsStream, subjects: [`${natsSubjectPrefix}.>`], storage: StorageType.File, duplicate_window: nanos(window), ...limits });
        this.log.info({ stream: natsStream }, 'JetStream stream created');
      }
      // Objm.create adds the bucket's stream only when its info says not found (@nats-io/obj,
      // ObjectStoreImpl.init): a bucket that exists is used as it is.
      const bucket = await new Objm(nc).create(natsObjectBucket, {
        storage: StorageType.File, replicas: limits.num_replicas, ttl: limits.max_age, max_bytes: limits.max_bytes,
      });
      this.log.info({ servers: natsServers, stream: natsStream, bucket: natsObjectBucket }, 'NATS connected');
      return { nc, js: jetstream(nc, { timeout: PUBLISH_TIMEOUT_MS }), bucket };
    } catch (err) {
      await nc.close();
      throw err;
    }
  }
}

/** `work`, or the abort reason as soon as `signal` aborts (`work` goes on and is ignored). */
function unlessAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}
