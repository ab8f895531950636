/**
 * The crash loop's check after each restart: the store against the ledger. Every acknowledged
 * (or previously seen) event is listed with the fields it was sent with, every acknowledged file
 * gives back its exact bytes (whole, and a random slice by Range), nothing refused or unknown to
 * the ledger is stored, staging is empty, and counters and filtered queries agree with the
 * records. Unknown outcomes found stored are adopted into the ledger.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Ledger, SentAttachment, SentEvent } from './crash-ledger.js';
import { fixture } from './fixtures.js';
import type { StoreClient } from './http-client.js';
import { checkAgreement } from './query-agreement.js';
import type { Random } from './random.js';
import { checkFile, listAllEvents, mapParallel, type ListedEvent, type ListedFile } from './store-reads.js';
import { payload } from './upload-payloads.js';

/** What one audit found. Each entry names the event or file and what was wrong. */
export interface AuditFindings {
  /** Acknowledged or seen events missing from the store. */
  lostEvents: string[];
  /** Acknowledged or seen files missing (404, or not listed by their event). */
  lostFiles: string[];
  /** Wrong fields or bytes, refused or unknown writes stored. */
  corrupt: string[];
  /** Staging left over, counters or queries disagreeing with the records. */
  inconsistent: string[];
  eventsChecked: number;
  filesChecked: number;
  /** Events gone because the record cap deleted them (the oldest first): allowed, and forgotten. */
  deletedByCleanup: number;
  /** Events whose removal was acknowledged (`Ledger.removed`), checked absent. */
  removalsChecked: number;
  /** Events created while an acknowledged reset ran, found gone with it: allowed, and forgotten. */
  goneWithReset: number;
}

/** How the store was run. */
export interface AuditOptions {
  /** MAX_RECORDS when the crash loop runs with a record cap: cleanup may delete the oldest events. */
  recordCap?: number;
}

/** Waits (bounded) until cleanup has brought the store within its record cap, so it deletes nothing during the audit. */
async function settleCleanup(client: StoreClient, cap: number): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if ((await client.getJson('/stats')).current.total_events <= cap) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the store stayed above MAX_RECORDS=${cap} for 30 s`);
}

interface FileToCheck {
  what: string;
  path: string;
  bytes: Buffer;
}

/** Field-by-field differences between what was sent and what the store lists. */
function fieldProblems(sent: SentEvent, got: ListedEvent): string[] {
  const problems: string[] = [];
  if (sent.id !== undefined && got.id !== sent.id) problems.push(`id ${got.id}, acknowledged ${sent.id}`);
  if (sent.createdAt !== undefined && got.created_at !== sent.createdAt) problems.push(`created_at ${got.created_at}, acknowledged ${sent.createdAt}`);
  for (const [key, value] of Object.entries(sent.fields)) {
    const stored = (got as unknown as Record<string, unknown>)[key];
    if (!isDeepStrictEqual(stored, value)) problems.push(`${key} ${JSON.stringify(stored)}, sent ${JSON.stringify(value)}`);
  }
  if (got.images.length !== sent.images.length) problems.push(`${got.images.length} images, sent ${sent.images.length}`);
  sent.images.forEach((image, i) => {
    const stored = got.images[i];
    if (!stored) return;
    if (stored.label !== image.label || !isDeepStrictEqual(stored.object_detections, image.detections)) problems.push(`image ${i} results differ`);
    if (stored.file_id === null || (sent.imageIds && stored.file_id !== sent.imageIds[i])) problems.push(`image ${i} file_id ${stored.file_id}, acknowledged ${sent.imageIds?.[i]}`);
  });
  const files = got.images.length + got.videos.length + got.local_only_files.length;
  if (got.original_file_count !== files || got.current_file_count !== files) {
    problems.push(`file counts ${got.original_file_count}/${got.current_file_count}, lists ${files} files`);
  }
  if (got.draft !== (got.finalized_at === null)) problems.push(`draft ${got.draft} with finalized_at ${got.finalized_at}`);
  const mustBeFinal = !sent.draft || sent.finalize === 'acked' || sent.seenFinalized;
  if (mustBeFinal && got.draft) problems.push('a draft again, though finalized');
  return problems;
}

/** Matches the files an event lists with the uploads sent to it. */
function attachmentProblems(sent: SentEvent, got: ListedEvent, findings: AuditFindings, files: FileToCheck[]): void {
  const listed: [ListedFile, SentAttachment['kind']][] = [
    ...got.videos.map((f) => [f, 'video'] as [ListedFile, SentAttachment['kind']]),
    ...got.local_only_files.map((f) => [f, 'local_only'] as [ListedFile, SentAttachment['kind']]),
  ];
  const labels = new Set<string>();
  for (const [file, kind] of listed) {
    const what = `upload ${file.label} of ${got.id}`;
    const upload = sent.attachments.find((a) => a.label === file.label);
    if (labels.has(file.label)) findings.corrupt.push(`${what}: listed twice`);
    labels.add(file.label);
    if (!upload) {
      findings.corrupt.push(`${what}: never sent`);
      continue;
    }
    if (upload.outcome === 'refused') findings.corrupt.push(`${what}: refused, yet stored`);
    if (upload.kind !== kind || (upload.fileId !== undefined && upload.fileId !== file.file_id) || file.size_bytes !== payload(upload.payload).length) {
      findings.corrupt.push(`${what}: listed as ${kind} ${file.file_id} of ${file.size_bytes} bytes, sent ${upload.kind} ${upload.fileId ?? '?'} of ${payload(upload.payload).length}`);
      continue;
    }
    upload.seen = true;
    upload.fileId = file.file_id;
    files.push({ what, path: `/${kind === 'video' ? 'videos' : 'local-only-files'}/${file.file_id}`, bytes: payload(upload.payload) });
  }
  for (const upload of sent.attachments) {
    if ((upload.outcome === 'acked' || upload.seen) && !labels.has(upload.label)) findings.lostFiles.push(`upload ${upload.label} (${upload.fileId}) of ${got.id}: not listed`);
  }
}

/**
 * Audits the store at `client` (just restarted, no writer running) against `ledger`.
 * @param dataDir the store's DATA_DIR (its staging/ must be empty after start-up)
 */
export async function auditStore(client: StoreClient, ledger: Ledger, dataDir: string, rng: Random, options: AuditOptions = {}): Promise<AuditFindings> {
  const findings: AuditFindings = {
    lostEvents: [], lostFiles: [], corrupt: [], inconsistent: [], eventsChecked: 0, filesChecked: 0, deletedByCleanup: 0, removalsChecked: 0, goneWithReset: 0,
  };
  const staging = fs.readdirSync(path.join(dataDir, 'staging'));
  if (staging.length > 0) findings.inconsistent.push(`staging not empty after start-up: ${staging.join(', ')}`);

  if (options.recordCap !== undefined) await settleCleanup(client, options.recordCap);
  const events = await listAllEvents(client);
  const byToken = new Map<string, ListedEvent>();
  for (const event of events) {
    const token = String(event.custom_metadata.token);
    const sent = ledger.events.get(token);
    const removal = ledger.removed.get(token);
    if (byToken.has(token)) findings.corrupt.push(`event ${event.id}: token ${token} stored twice`);
    else if (removal) findings.corrupt.push(`event ${event.id} (${token}): its removal (${removal}) was acknowledged, yet it is listed again`);
    else if (!sent) findings.corrupt.push(`event ${event.id}: never sent (token ${token})`);
    else if (sent.outcome === 'refused') findings.corrupt.push(`event ${event.id}: create of ${token} was refused, yet stored`);
    byToken.set(token, event);
  }
  findings.removalsChecked = [...ledger.removed.keys()].filter((token) => !byToken.has(token)).length;

  // With a record cap, cleanup deletes the oldest events: an event older than every one listed may be gone.
  const oldestListed = events.find((e) => ledger.events.has(String(e.custom_metadata.token)))?.created_at;
  const files: FileToCheck[] = [];
  for (const sent of [...ledger.events.values()]) {
    const got = byToken.get(sent.token);
    if (!got) {
      if (sent.mayBeReset) {
        ledger.forget(sent);
        findings.goneWithReset++;
      } else if (options.recordCap !== undefined && sent.createdAt !== undefined && oldestListed !== undefined && sent.createdAt < oldestListed) {
        ledger.forget(sent);
        findings.deletedByCleanup++;
      } else if (sent.outcome === 'acked' || sent.seen) {
        findings.lostEvents.push(`event ${sent.id ?? sent.token}: not listed`);
      }
      continue;
    }
    if (sent.outcome === 'refused') continue;
    findings.eventsChecked++;
    const problems = fieldProblems(sent, got);
    if (problems.length > 0) findings.corrupt.push(`event ${got.id} (${sent.token}): ${problems.join('; ')}`);
    sent.seen = true;
    sent.storedBy ??= ledger.now();
    sent.id = got.id;
    sent.createdAt = got.created_at;
    sent.imageIds = got.images.map((i) => i.file_id!);
    if (!got.draft) sent.seenFinalized = true;
    got.images.forEach((image, i) => {
      if (image.file_id && sent.images[i]) files.push({ what: `image ${i} of ${got.id}`, path: `/images/${image.file_id}`, bytes: fixture(sent.images[i].fixture) });
    });
    attachmentProblems(sent, got, findings, files);
  }

  // Every file whole; one in eight also by a random Range slice.
  const checks = files.map((file) => ({ file, slice: rng.chance(0.125) ? randomSlice(rng, file.bytes.length) : undefined }));
  const results = await mapParallel(checks, 8, async ({ file, slice }) => {
    const whole = await checkFile(client, file.path, file.bytes);
    return whole === 'ok' && slice ? checkFile(client, file.path, file.bytes, slice) : whole;
  });
  results.forEach((result, i) => {
    if (result === 'missing') findings.lostFiles.push(`${files[i].what}: ${files[i].path} answers 404`);
    if (result === 'different') findings.corrupt.push(`${files[i].what}: ${files[i].path} bytes differ`);
  });
  findings.filesChecked = files.length;
  findings.inconsistent.push(...(await checkAgreement(client, events)));
  return findings;
}

function randomSlice(rng: Random, length: number): [number, number] {
  const start = rng.int(0, length - 1);
  return [start, rng.int(start, length - 1)];
}
