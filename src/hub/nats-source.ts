/**
 * Hub mode (docs/OPERATIONS.md, "Hub mode"): with NATS_SOURCE_URL set, the store consumes a
 * fleet's stream (NATS_SOURCE_STREAM, the subjects NATS_SOURCE_SUBJECTS) with a durable pull
 * consumer (NATS_SOURCE_DURABLE, created when absent) into its own store, on the HTTP thread (the
 * store's writer). Each message is one event as its device's JetStream sink published it; its
 * images and videos are fetched from the bucket NATS_SOURCE_BUCKET. A message is acknowledged
 * only once the event and its files are durable here (event-import.ts); a re-delivered one
 * changes nothing (idempotent by event id), so a hub killed mid-consume loses and repeats nothing.
 *
 * A message that is not an event this store can take (malformed JSON, refused by validation) is
 * logged and terminated (never redelivered); a failure here (disk full, a file that cannot be
 * read) is retried after a pause. While the store is capacity-blocked, consuming waits.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Semaphore } from 'async-mutex';
import { AckPolicy, DeliverPolicy, JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, type Consumer, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { exponentialBackoff } from '../backoff.js';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import { type EventStore, isCanonicalId } from '../store/index.js';
import { connectNats } from '../sinks/nats-connection.js';
import { filesOf, type Bucket, type BucketFiles } from './bucket-files.js';
import { claimedIds, FileMissing, IdCollision, imageFileIds, importEvent } from './event-import.js';
import { HubLag, type HubLagStatus } from './hub-lag.js';

/**
 * How long a delivered message may wait for its ack before JetStream delivers it again (ms): what
 * a hub restarted after a crash waits for the messages its last run had pulled. A message being
 * stored is kept from redelivery by `working()` every half of it.
 */
const ACK_WAIT_MS = 10_000;
/**
 * Events stored at once: their creates share the store's commits. 64 imported 1,399 image events/s
 * where 32 imported 1,118/s and 128 about as many as 64 (native-bench/PROFILE.md, "The hub's import").
 */
const IMPORTS_AT_ONCE = 64;
/**
 * Image bytes the imports under way may hold at once (an image is read whole from the bucket;
 * videos are streamed): an import waits until its images' sizes fit. One import larger than
 * this runs alone.
 */
export const IMPORT_MEMORY_BYTES = 64 * 1024 * 1024;
/**
 * The unit IMPORT_MEMORY_BYTES is counted in (bytes): an import takes its images' bytes rounded up
 * to it. Coarse on purpose: the semaphore's release walks every value from the free weight down
 * to 1 (async-mutex, Semaphore._drainUnlockWaiters), and in KiB that walk was a tenth of the
 * hub's CPU (native-bench/PROFILE.md, "The hub's import").
 */
const MEMORY_UNIT_BYTES = 256 * 1024;
const MEMORY_UNITS = IMPORT_MEMORY_BYTES / MEMORY_UNIT_BYTES;
/** Messages pulled ahead of those being stored: each up to the server's `max_payload` (1 MiB by default) in memory. */
const PULL_AHEAD = 128;
/** Pause before a message that failed here is delivered again (ms). */
const RETRY_DELAY_MS = 5000;
/**
 * Deliveries of an event whose files are not in the bucket yet (they travel apart from the
 * events when the bucket is sourced) before it is stored without them (they are gone: the
 * bucket's limits removed them).
 */
const DELIVERIES_AWAITING_FILES = 5;
const RECONNECT = { baseMs: 500, capMs: 30_000, random: Math.random };
/** Missed heartbeats after which a consume is started again. */
const MISSED_HEARTBEATS = 3;

/** The settings hub mode reads. */
export type NatsSourceSettings = Pick<Config, 'natsSourceServers' | 'natsCreds' | 'natsSourceStream' | 'natsSourceSubjects' | 'natsSourceDurable' | 'natsSourceBucket' | 'maxRecordSizeBytes' | 'maxVideoUploadBytes' | 'maxPredictionsPerImage' | 'maxPredictionsPerEvent' | 'maxPointsPerEvent' | 'natsSourceLagWarnSeconds'>;

/** `/stats` `hub` (docs/API.md, "Statistics"). */
export interface HubStatus extends HubLagStatus {
  imported: number;
  terminated: number;
  collisions: number;
}

export class NatsSource {
  private connection: NatsConnection | undefined;
  private messages: ConsumerMessages | undefined;
  /** The durable consumer, once subscribed: its info gives what is pending (hub-lag.ts). */
  private consumer: Consumer | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  /** Imports under way, under every id each claims (claimedIds). */
  private readonly importing = new Map<string, Promise<unknown>>();
  /** IMPORT_MEMORY_BYTES in MEMORY_UNIT_BYTES, weighted by each import's images (async-mutex). */
  private readonly memory = new Semaphore(MEMORY_UNITS);
  /** Events stored from the stream since start (re-deliveries of stored ones not counted). */
  consumed = 0;
  /** Messages terminated since start: not a JSON object, or an event this store refuses. */
  terminated = 0;
  /** Of those, events refused for an id stored here for another event or device (IdCollision). */
  collisions = 0;
  /** How far behind the stream the hub is: pending messages and the lag (hub-lag.ts). */
  readonly lag: HubLag;

  constructor(
    private readonly store: EventStore,
    private readonly settings: NatsSourceSettings,
    /** The HTTP thread's capacity gate (src/lifecycle/capacity-gate.ts): consuming waits while it is blocked. */
    private readonly gate: { readonly blocked: boolean },
    private readonly log: Logger,
  ) {
    this.lag = new HubLag(async () => this.consumer?.info(), settings.natsSourceLagWarnSeconds, log);
  }

  /** Starts consuming in the background (connecting first, however long the servers take), and following the lag. */
  start(): void {
    this.running ??= this.run();
    this.lag.start();
  }

  /** `/stats` `hub`: counts since the start and the lag, as last read; never waits for NATS. */
  status(): HubStatus {
    return { imported: this.consumed, terminated: this.terminated, collisions: this.collisions, ...this.lag.status() };
  }

  /** Stops after the message being stored (its ack sent), and closes the connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.lag.stop();
    this.messages?.stop();
    await this.running;
    await this.connection?.flush().catch(() => undefined); // the last acks, sent without waiting for their answers
    await this.connection?.close();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        const { messages, bucket } = await this.subscribe();
        failures = 0;
        // IMPORTS_AT_ONCE events are stored together (their creates share commits); the next
        // message is taken when one of them is done.
        const taking = new Set<Promise<void>>();
        for await (const message of messages) {
          // take() answers every message itself; a throw here would be a bug, never input's fault.
          const taken = this.take(message, bucket).catch((err: unknown) => {
            this.log.error({ err, subject: message.subject, seq: message.seq }, 'taking a fleet message failed; it is delivered again');
            message.nak(RETRY_DELAY_MS);
          }).finally(() => taking.delete(taken));
          taking.add(taken);
          if (taking.size >= IMPORTS_AT_ONCE) await Promise.race(taking);
          if (this.stopped) break;
        }
        await Promise.all(taking);
      } catch (err) {
        if (this.stopped) break;
        if (notMadeYet(err)) this.log.warn({ reason: (err as Error).message }, 'the fleet stream or bucket does not exist yet (no device has shipped); waiting');
        else this.log.error({ err }, 'consuming the fleet stream failed; retrying');
        await sleep(exponentialBackoff(failures++, RECONNECT));
      }
    }
  }

  /** Connects (once), makes the durable consumer when absent, and starts pulling. */
  private async subscribe(): Promise<{ messages: ConsumerMessages; bucket: Bucket }> {
    const { natsSourceServers, natsCreds, natsSourceStream, natsSourceSubjects, natsSourceDurable, natsSourceBucket } = this.settings;
    this.connection ??= await connectNats(natsSourceServers, natsCreds, 'edge-event-store hub');
    const nc = this.connection;
    const jsm = await jetstreamManager(nc);
    try {
      await jsm.consumers.info(natsSourceStream, natsSourceDurable);
    } catch (err) {
      if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound)) throw err;
      await jsm.consumers.add(natsSourceStream, {
        durable_name: natsSourceDurable,
        filter_subject: natsSourceSubjects,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: nanos(ACK_WAIT_MS),
      });
      this.log.info({ stream: natsSourceStream, consumer: natsSourceDurable, subjects: natsSourceSubjects }, 'durable consumer created');
    }
    const bucket: Bucket = { name: natsSourceBucket, objects: await new Objm(nc).open(natsSourceBucket), jsm };
    const consumer = await jetstream(nc).consumers.get(natsSourceStream, natsSourceDurable);
    this.consumer = consumer;
    // consume() re-requests messages as it yields them, until stopped, and recovers from most
    // server restarts by itself (@nats-io/jetstream README, "Consuming messages", "Heartbeats").
    const messages = await consumer.consume({ max_messages: PULL_AHEAD });
    this.messages = messages;
    // "If it doesn't [recover] and starts reporting HeartbeatsMissed statuses, stop() the
    // ConsumerMessages and recreate it" (same README): run() then subscribes again.
    void (async () => {
      for await (const status of messages.status()) {
        if (status.type === 'heartbeats_missed' && status.count >= MISSED_HEARTBEATS) messages.stop();
      }
    })();
    this.log.info({ stream: natsSourceStream, consumer: natsSourceDurable }, 'consuming the fleet stream');
    return { messages, bucket };
  }

  /**
   * Imports `event` after every import under way that shares one of its ids (claimedIds: the
   * event's or a file's; a re-delivery, or another message naming the same file) has ended, so
   * each id is stored once and a collision is seen as one.
   */
  private async importOnce(event: Record<string, unknown>, bucket: Bucket, missingFiles: 'wait' | 'skip'): Promise<'stored' | 'present'> {
    const ids = claimedIds(event);
    let earlier = ids.map((id) => this.importing.get(id)).filter((work) => work !== undefined);
    while (earlier.length > 0) {
      await Promise.allSettled(earlier);
      earlier = ids.map((id) => this.importing.get(id)).filter((work) => work !== undefined);
    }
    const files = filesOf(bucket, this.settings);
    const work = this.withImageMemory(event, files, () => importEvent(this.store, event, files, missingFiles, this.settings));
    for (const id of ids) this.importing.set(id, work);
    try {
      return await work;
    } finally {
      for (const id of ids) if (this.importing.get(id) === work) this.importing.delete(id);
    }
  }

  /**
   * Runs `work` once the sizes of `event`'s images in the bucket (read from the objects' info)
   * fit in IMPORT_MEMORY_BYTES beside the other imports' (at most all of it: a larger import
   * runs alone).
   */
  private async withImageMemory<T>(event: Record<string, unknown>, files: BucketFiles, work: () => Promise<T>): Promise<T> {
    // An id that is no UUID is refused by importEvent before any read: nothing to weigh.
    const sizes = await Promise.all(imageFileIds(event.images).filter(isCanonicalId).map((fileId) => files.size(fileId)));
    const units = Math.ceil(sizes.reduce((sum, size) => sum + size, 0) / MEMORY_UNIT_BYTES);
    return this.memory.runExclusive(work, Math.min(Math.max(1, units), MEMORY_UNITS));
  }

  /** Terminates `message` for good (never redelivered), with a log line, and counts it. */
  private terminate(message: JsMsg, reason: string, details: Record<string, unknown>): void {
    this.terminated++;
    this.log.error({ ...details, subject: message.subject, seq: message.seq }, `${reason}; terminated`);
    message.term();
  }

  /** Stores one message's event, then acknowledges it; or terminates it, or asks for it again later. */
  private async take(message: JsMsg, bucket: Bucket): Promise<void> {
    let event: Record<string, unknown>;
    try {
      event = message.json<Record<string, unknown>>();
    } catch (err) {
      this.terminate(message, 'a fleet message is not JSON', { err });
      return;
    }
    // `null`, a number, a string or an array parse as JSON too: an event is an object.
    if (event === null || typeof event !== 'object' || Array.isArray(event)) {
      this.terminate(message, 'a fleet message is not a JSON object', { json: event === null ? 'null' : Array.isArray(event) ? 'array' : typeof event });
      return;
    }
    while (this.gate.blocked && !this.stopped) {
      message.working(); // capacity-blocked: hold it, do not let it be redelivered meanwhile
      await sleep(1000);
    }
    const working = setInterval(() => message.working(), ACK_WAIT_MS / 2); // a long video
    try {
      const missingFiles = message.info.deliveryCount >= DELIVERIES_AWAITING_FILES ? 'skip' : 'wait';
      if ((await this.importOnce(event, bucket, missingFiles)) === 'stored') this.consumed++;
      // Not ackAck: a lost ack only delivers the event again, which finds it stored ('present').
      message.ack();
      this.lag.imported(message.timestampNanos);
    } catch (err) {
      if (err instanceof IdCollision) {
        this.collisions++;
        this.terminate(message, 'a fleet event names an id stored here for another event or device', { reason: err.message, eventId: event.id });
        return;
      }
      if (err instanceof AppError && err.status < 500) {
        this.terminate(message, 'a fleet event this store cannot take', { err, eventId: event.id });
        return;
      }
      if (err instanceof FileMissing) this.log.warn({ eventId: event.id, fileId: err.fileId, delivery: message.info.deliveryCount }, 'a fleet event\'s file is not in the bucket yet; it is delivered again');
      else this.log.error({ err, eventId: event.id }, 'storing a fleet event failed; it is delivered again');
      message.nak(RETRY_DELAY_MS);
    } finally {
      clearInterval(working);
    }
  }
}

/** The stream or the bucket is absent: the first device's sink makes them. */
function notMadeYet(err: unknown): boolean {
  return (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) || (err as Error).message === 'object store not found';
}
