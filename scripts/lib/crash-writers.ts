/**
 * The crash loop's writers: concurrent loops that create image events (real JPEGs), open drafts,
 * stream video and local-only uploads into them and finalize them, recording every request and
 * its outcome in the ledger, until the store is killed under them. With `WriterOptions` they also
 * reset the store now and then, and have the deletions of a record cap acknowledged, so that an
 * audit can check that no acknowledged removal is undone.
 */
import type { Answer, StoreClient } from './http-client.js';
import { fixtureBase64, IMAGE_FIXTURES } from './fixtures.js';
import type { Ledger, Outcome, SentAttachment, SentEvent, SentImage } from './crash-ledger.js';
import type { Random } from './random.js';
import { LOCAL_ONLY_PAYLOADS, payload, VIDEO_PAYLOADS } from './upload-payloads.js';

/** Answers the writers did not expect (e.g. a 500): each one is a finding. */
export interface UnexpectedAnswer {
  request: string;
  status: number;
  body: string;
}

const DEVICES = ['cam-0', 'cam-1', 'cam-2', 'cam-3'];
const WORKFLOWS = ['wf-0', 'wf-1', 'wf-2'];
const LINES = ['A', 'B', 'C'];
const SCHEMAS = ['quality_check', 'inventory_count', 'safety_alert', 'custom', 'operator_feedback'] as const;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** The oldest acknowledged events a deletion round looks up. */
const DELETION_PROBES = 16;

/** What the writers do beside creates, uploads and finalizes. */
export interface WriterOptions {
  /**
   * The store runs with a record cap (MAX_RECORDS): cleanup may delete a draft under its writer,
   * so attach and finalize may answer 404; a loop has each deletion it sees acknowledged
   * (`Ledger.deletionAcknowledged`).
   */
  recordCap?: boolean;
  /** A loop resets the store (`POST /reset/request`, `/reset/confirm`) every `resetEveryMs` on average. */
  resetEveryMs?: number;
}

/** Runs the writer loops of one cycle against one store. */
export class CrashWriters {
  readonly unexpected: UnexpectedAnswer[] = [];
  private stopping = false;
  private loops: Promise<void>[] = [];
  private seq = 0;
  /** Resets sent so far, and whether one is unanswered: a deletion seen meanwhile may be the reset's. */
  private resetsSent = 0;
  private resetInFlight = false;
  /** Attach and finalize may answer 404: cleanup or a reset may remove a draft under its writer. */
  private readonly eventsMayVanish: boolean;

  constructor(
    private readonly client: StoreClient,
    private readonly ledger: Ledger,
    private readonly rng: Random,
    private readonly options: WriterOptions = {},
  ) {
    this.eventsMayVanish = options.recordCap === true || options.resetEveryMs !== undefined;
  }

  /** Starts `imageWriters` image loops and `draftWriters` draft loops, and the loops `options` asks for. */
  start(imageWriters: number, draftWriters: number): void {
    this.stopping = false;
    for (let i = 0; i < imageWriters; i++) this.loops.push(this.imageLoop());
    for (let i = 0; i < draftWriters; i++) this.loops.push(this.draftLoop());
    if (this.options.recordCap) this.loops.push(this.deletionLoop());
    if (this.options.resetEveryMs !== undefined) this.loops.push(this.resetLoop(this.options.resetEveryMs));
  }

  /** Ends the loops (call once the store is dead: their requests fail at once) and waits for them. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.loops);
    this.loops = [];
  }

  private async imageLoop(): Promise<void> {
    while (!this.stopping) {
      const event = this.newEvent(false);
      await this.create(event);
      await pause(this.rng.int(10, 100));
    }
  }

  private async draftLoop(): Promise<void> {
    while (!this.stopping) {
      const event = this.newEvent(true);
      if ((await this.create(event)) !== 'acked') continue;
      for (let n = this.rng.int(1, 2); n > 0 && !this.stopping; n--) await this.attach(event);
      if (this.stopping || this.rng.chance(0.3)) continue;
      event.finalize = await this.send(`finalize ${event.id}`, this.eventsMayVanish ? [200, 404] : [200], () => this.client.request('POST', `/v2/events/${event.id}/finalize`));
      // A late upload to a finalized event must be refused (409) and leave nothing behind.
      if (event.finalize === 'acked' && this.rng.chance(0.2)) await this.attach(event, 409);
    }
  }

  /**
   * Looks up the oldest acknowledged events; once some are gone (deleted by cleanup, which the
   * record cap makes delete the oldest first), asks for a cleanup: its 200 comes after every
   * earlier cleanup has ended durably, so the deletions seen are acknowledged. A round that
   * overlaps a reset acknowledges nothing, since what it saw gone may be the reset's.
   */
  private async deletionLoop(): Promise<void> {
    while (!this.stopping) {
      await pause(this.rng.int(200, 800));
      const resets = this.resetsSent;
      if (this.resetInFlight) continue;
      const oldest = [...this.ledger.events.values()]
        .filter((e) => e.outcome === 'acked' && e.createdAt !== undefined)
        .sort((a, b) => (a.createdAt! < b.createdAt! ? -1 : 1))
        .slice(0, DELETION_PROBES);
      const gone: SentEvent[] = [];
      for (const event of oldest) {
        const read = await this.answerTo('GET', `/v2/events/${event.id}`);
        if (read) this.check(`read ${event.id}`, read, [200, 404]);
        if (read?.status !== 404) break;
        gone.push(event);
      }
      if (gone.length === 0 || this.stopping) continue;
      const cleanup = await this.answerTo('POST', '/admin/cleanup');
      const overlapped = this.resetsSent !== resets || this.resetInFlight;
      // A reset restarts the lifecycle worker, and a cleanup it cuts short answers 500 (docs/API.md, "Cleanup and reset").
      if (cleanup) this.check('cleanup', cleanup, overlapped ? [200, 500] : [200]);
      if (cleanup?.status === 200 && !overlapped) for (const event of gone) this.ledger.deletionAcknowledged(event);
    }
  }

  /** Resets the store at random moments, `everyMs` apart on average; each acknowledged reset goes in the ledger. */
  private async resetLoop(everyMs: number): Promise<void> {
    while (!this.stopping) {
      await pause(this.rng.int(everyMs / 2, everyMs * 1.5));
      if (this.stopping) return;
      let token: string | undefined;
      const issued = await this.send('reset request', [200], async () => {
        const answer = await this.client.request('POST', '/reset/request');
        if (answer.status === 200) token = answer.json().reset_token;
        return answer;
      });
      if (issued !== 'acked' || this.stopping) continue;
      this.resetsSent++;
      this.resetInFlight = true;
      const sentAt = this.ledger.resetSent();
      const confirmed = await this.send('reset confirm', [200], () => this.client.request('POST', '/reset/confirm', { json: { reset_token: token } }));
      this.ledger.resetAnswered(sentAt, confirmed);
      // An unanswered reset may have happened or not: until these writers stop, nothing seen gone counts.
      if (confirmed !== 'unknown') this.resetInFlight = false;
    }
  }

  /** A new event for the ledger, with its fields, images and a unique token. */
  private newEvent(draft: boolean): SentEvent {
    const rng = this.rng;
    const token = this.ledger.token(draft ? 'd' : 'e');
    const acked = draft ? undefined : [...this.ledger.events.values()].find((e) => e.outcome === 'acked');
    const schema = rng.pick(acked ? SCHEMAS : SCHEMAS.slice(0, 4));
    const images: SentImage[] = Array.from({ length: draft ? rng.int(0, 1) : rng.int(1, 2) }, (_, i) => ({
      fixture: rng.chance(0.1) ? 'retina.jpg' : rng.pick(IMAGE_FIXTURES.slice(0, 3)),
      label: `view-${i}`,
      detections: [{ class: rng.pick(['cat', 'box', 'person']), x: rng.int(0, 600), y: rng.int(0, 400), width: rng.int(1, 200), height: rng.int(1, 200), confidence: rng.int(0, 100) / 100 }],
    }));
    const event: SentEvent = {
      token,
      fields: {
        device_id: rng.pick(DEVICES),
        workflow_id: rng.pick(WORKFLOWS),
        inference_timestamp: new Date().toISOString(),
        event_schema: schema,
        event_data: eventData(schema, rng, acked?.id),
        custom_metadata: { token, line: rng.pick(LINES), seq: this.seq++, hot: rng.chance(0.5), temperature: rng.int(-200, 900) / 10 },
      },
      images,
      draft,
      outcome: 'unknown',
      seen: false,
      finalize: 'none',
      seenFinalized: false,
      attachments: [],
    };
    this.ledger.add(event);
    return event;
  }

  private async create(event: SentEvent): Promise<Outcome> {
    const body = {
      ...event.fields,
      draft: event.draft,
      images: event.images.map((image) => ({
        label: image.label,
        base64_image: fixtureBase64(image.fixture),
        object_detections: image.detections,
        classifications: [],
      })),
    };
    let created: { id: string; created_at: string; image_ids: string[] } | undefined;
    event.outcome = await this.send(`create ${event.token}`, [201], async () => {
      const answer = await this.client.request('POST', '/v2/events', { json: body });
      if (answer.status === 201) created = answer.json();
      return answer;
    });
    if (created) {
      event.storedBy = this.ledger.now();
      event.id = created.id;
      event.createdAt = created.created_at;
      event.imageIds = created.image_ids;
    }
    return event.outcome;
  }

  /** Uploads a video or local-only file to draft `event`, expecting `status`. */
  private async attach(event: SentEvent, status = 201): Promise<void> {
    const kind = this.rng.chance(0.75) ? 'video' : 'local_only';
    const name = this.rng.pick(kind === 'video' ? VIDEO_PAYLOADS : LOCAL_ONLY_PAYLOADS);
    const attachment: SentAttachment = { kind, label: this.ledger.token('up'), payload: name, outcome: 'unknown', seen: false };
    event.attachments.push(attachment);
    const form = new FormData();
    form.append('label', attachment.label);
    if (name.endsWith('.csv')) form.append('content_type', 'text/csv');
    form.append('file', new Blob([Uint8Array.from(payload(name))]), name);
    const route = kind === 'video' ? 'videos' : 'local-only-files';
    attachment.outcome = await this.send(`attach ${attachment.label} to ${event.id}`, this.eventsMayVanish ? [status, 404] : [status], async () => {
      const answer = await this.client.request('POST', `/v2/events/${event.id}/${route}`, { body: form });
      if (answer.status === 201) attachment.fileId = answer.json().file_id;
      return answer;
    });
  }

  /** Sends a request without a body; undefined when no answer came (the store is down). */
  private async answerTo(method: string, path: string): Promise<Answer | undefined> {
    try {
      return await this.client.request(method, path);
    } catch {
      return undefined;
    }
  }

  /** Records `answer` to `request` as unexpected when its status is not one of `expected`. */
  private check(request: string, answer: Answer, expected: number[]): void {
    if (!expected.includes(answer.status)) this.unexpected.push({ request, status: answer.status, body: answer.bytes.toString('utf8', 0, 300) });
  }

  /**
   * Sends a request and classifies its outcome: a 2xx is acked, any other status or a refused
   * connection refused (nothing may be kept), no answer unknown. A status outside `expected` is
   * also recorded as unexpected.
   */
  private async send(request: string, expected: number[], call: () => Promise<Answer>): Promise<Outcome> {
    let answer: Answer;
    try {
      answer = await call();
    } catch (err) {
      // Refused connection: the request never reached the store, so nothing of it may be kept.
      // Any other failure: the store died under the request, which may or may not have landed.
      return (err as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED' ? 'refused' : 'unknown';
    }
    this.check(request, answer, expected);
    return answer.status < 300 ? 'acked' : 'refused';
  }
}

function eventData(schema: (typeof SCHEMAS)[number], rng: Random, relatedId: string | undefined): Record<string, unknown> {
  switch (schema) {
    case 'quality_check': return { result: rng.pick(['pass', 'fail']), external_id: `lot-${rng.int(0, 20)}` };
    case 'inventory_count': return { location: `bay-${rng.int(1, 9)}`, item_count: rng.int(0, 500), item_type: 'box', external_id: `lot-${rng.int(0, 20)}` };
    case 'safety_alert': return { alert_type: 'no_helmet', severity: rng.pick(['low', 'medium', 'high']), description: 'operator without helmet in zone 3' };
    case 'custom': return { value: `reading ${rng.int(0, 1e6)}` };
    case 'operator_feedback': return { related_event_id: relatedId, feedback: rng.pick(['correct', 'incorrect', 'inconclusive']) };
  }
}
