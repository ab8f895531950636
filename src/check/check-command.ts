/**
 * `edge-events check [--data-dir DIR] [--repair [--without-sinks]] [--json]` (docs/OPERATIONS.md,
 * "Checking and repairing a data folder"): checks a data folder no store is running on
 * (src/store/engine/store-check.ts) and says what it found in plain words, or as JSON; with `--repair`,
 * rebuilds a damaged or missing index from the log, with the shipping ledger of the sinks its
 * environment configures (none only with `--without-sinks`), then checks again.
 *
 * It also says what the store would say of the environment's variables that look like settings
 * but are none (docs/OPERATIONS.md, "Misspelt settings"), in the lines `edge-events serve
 * --check-config` prints.
 *
 * Output contract, as the other subcommands': in JSON mode stdout gets one object,
 * `{check, repair, copies, recheck, unknown_settings}` (`repair`, `copies` and `recheck` null
 * without `--repair` or when it made no rebuild or rewrite; `unknown_settings` as /stats gives it); a failure to check at all
 * leaves stdout empty and writes `{"error": {"message", "hint"}}` to stderr. Exit codes
 * (src/command-runner.ts): 0 nothing damaged (after the repair, with `--repair`); 1 damage found
 * and left, variables that look like settings under UNKNOWN_SETTINGS=reject, or the check could
 * not run (a store holds the folder, no such folder, a bad setting).
 */
import path from 'node:path';
import type { Command } from 'commander';
import { registerCommand, runCommand, type ExitCode } from '../command-runner.js';
import { configuredSinks, ConfigError, loadConfig } from '../config.js';
import { SETTINGS, unknownSettingsJson, unknownSettingsOf, unknownSettingsReport } from '../settings.js';
import type { CheckReport, RebuildReport, UpgradeReport } from '../store/index.js';

/** Where the command reads its environment and writes its output. */
export interface CheckCliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
}

interface CheckOptions {
  dataDir?: string;
  repair?: boolean;
  withoutSinks?: boolean;
  json?: boolean;
}

/** The settings that turn a sink on, named from the settings table: `no CLOUD_UPLOAD_URL, no NATS_URL`. */
const NO_SINK_SETTINGS = `no ${SETTINGS.cloudUploadUrl}, no ${SETTINGS.natsServers}`;

/**
 * A repair asked for in an environment that configures no sink, without `--without-sinks`: the
 * shipping ledger it rebuilds would be empty, and the store's sinks would never ship what they
 * had not shipped before the damage. Most likely the store's env file was not read.
 */
class SinksNotConfigured extends Error {
  constructor() {
    super(`--repair rebuilds the shipping ledger for the sinks configured, and this environment configures none (${NO_SINK_SETTINGS}); nothing was changed`);
    this.name = 'SinksNotConfigured';
  }
}

/** Adds `check` to `program`; its action sets `process.exitCode`. */
export function registerCheckCommand(program: Command): void {
  registerCommand(program, addCheckCommand, { stdout: process.stdout, stderr: process.stderr, env: process.env });
}

/**
 * Runs `edge-events check` in-process, for tests and embedding.
 * @param argv the arguments after `check`, e.g. `['--data-dir', dir, '--json']`
 * @returns the exit code: 0 clean, 1 damage found or no check possible
 */
export function runCheckCli(argv: string[], io: CheckCliIo): Promise<ExitCode> {
  return runCommand('check', addCheckCommand, argv, io);
}

function addCheckCommand(program: Command, io: CheckCliIo, setExitCode: (code: ExitCode) => void): void {
  program
    .command('check')
    .description('Check a data folder no store is running on: the index file, every frame of the log, the index against the log (docs/OPERATIONS.md, "Checking and repairing a data folder"); and the environment\'s variables that look like settings but are none.')
    .option('--data-dir <dir>', `the data folder (env ${SETTINGS.dataDir}, default ./data)`)
    .option('--repair', 'rebuild a damaged or missing index from the log (the old db/ is kept as db.damaged-<time>), then check again')
    .option('--without-sinks', `with --repair: the store ships to no sink (${NO_SINK_SETTINGS}), so no shipping ledger is rebuilt`)
    .option('--json', 'machine-readable output: {check,repair,copies,recheck,unknown_settings} on stdout, {error:{message,hint}} on stderr')
    .action(async (options: CheckOptions) => {
      setExitCode(await executeCheck(options, io));
    });
}

/** The data folder: `--data-dir`, else DATA_DIR as the store reads it (src/config.ts), else ./data. */
function dataDirOf(options: CheckOptions, env: CheckCliIo['env']): string {
  return path.resolve(options.dataDir ?? (env[SETTINGS.dataDir]?.trim() || './data'));
}

async function executeCheck(options: CheckOptions, io: CheckCliIo): Promise<ExitCode> {
  const json = options.json === true;
  const dataDir = dataDirOf(options, io.env);
  try {
    // What the store would say of this environment's variables that look like settings but are none.
    const unknown = unknownSettingsOf(io.env);
    // The store's modules (LMDB among them) load for this command only, as for `serve` (src/cli.ts).
    const [{ checkStore, holdForCheck, rebuildIndex, rewriteRecordCopies }, { presentEventJson }] = await Promise.all([import('../store/index.js'), import('../events/present.js')]);
    // One lock from the check to the recheck: no store starts on the folder in between.
    const { check, repair, copies, recheck } = await holdForCheck(dataDir, async () => {
      const check = await checkStore(dataDir, presentEventJson);
      let repair: RebuildReport | null = null;
      let copies: UpgradeReport | null = null;
      let recheck: CheckReport | null = null;
      if (options.repair === true && check.rebuild !== null) {
        // The store's own settings: its sinks get the shipping ledger the replay rebuilds.
        const sinks = configuredSinks(loadConfig({ ...io.env, [SETTINGS.dataDir]: dataDir }));
        if (sinks.length === 0 && options.withoutSinks !== true) throw new SinksNotConfigured();
        repair = await rebuildIndex(dataDir, { sinks, present: presentEventJson });
        recheck = await checkStore(dataDir, presentEventJson);
      } else if (options.repair === true && (check.indexAgainstLog?.indexOnly ?? 0) > 0) {
        // The index is sound and alone holds some records: they are written back into the log.
        const sinks = configuredSinks(loadConfig({ ...io.env, [SETTINGS.dataDir]: dataDir }));
        copies = (await rewriteRecordCopies(dataDir, { sinks, present: presentEventJson })) ?? null;
        recheck = await checkStore(dataDir, presentEventJson);
      }
      return { check, repair, copies, recheck };
    });
    const final = recheck ?? check;
    // Events the repair could not give back are damage whatever the recheck of what is left says.
    const lost = repair !== null && (repair.lost.length > 0 || repair.salvageIncomplete);
    const settingsLines = unknownSettingsReport(unknown.found, unknown.policy).map((line) => `${line}\n`).join('');
    io.stdout.write(json
      ? `${JSON.stringify({ check, repair, copies, recheck, unknown_settings: unknownSettingsJson(unknown.found) })}\n`
      : describe(check, options.repair === true, repair, recheck, copies) + (settingsLines === '' ? '' : `\n${settingsLines}`));
    return final.damage || lost || (unknown.policy === 'reject' && unknown.found.length > 0) ? 1 : 0;
  } catch (error) {
    const message = (error as Error).message;
    const hint = error instanceof ConfigError
      ? 'The check reads the settings as the store does, and the repair opens the store with them: run it with the environment the store runs with (e.g. its env file).'
      : error instanceof SinksNotConfigured
        ? 'Run it with the environment the store runs with (e.g. its env file: docs/OPERATIONS.md, "Checking and repairing a data folder"), or add --without-sinks if the store ships to no sink.'
        : 'See edge-events check --help.';
    io.stderr.write(json ? `${JSON.stringify({ error: { message, hint } })}\n` : `error: ${message}\nhint: ${hint}\n`);
    return 1;
  }
}

const n = (value: number): string => value.toLocaleString('en-US');
const FRAME_NAMES: Record<string, string> = { image: 'an image frame', video: 'a video frame', local_only: 'a local-only file\'s frame', record: 'a record frame', change: 'a update frame' };
const plural = (count: number, one: string, many = `${one}s`): string => `${n(count)} ${count === 1 ? one : many}`;

/** The report in plain words, one finding a line. */
export function describe(check: CheckReport, repairAsked: boolean, repair: RebuildReport | null, recheck: CheckReport | null, copies: UpgradeReport | null = null): string {
  const lines = [`Data folder ${check.dataDir}`, ...describeCheck(check)];
  if (copies && recheck) {
    lines.push('', `Repair: wrote the record copies of ${plural(copies.copied, 'event')} the index alone held back into the log (docs/STORAGE.md, "Two copies of every record").`);
    lines.push('', 'Checked again after the repair:', ...describeCheck(recheck));
  } else if (repairAsked && repair === null) {
    lines.push(check.damage ? `Repair: not made. ${whyNoRebuild(check)}` : 'Repair: nothing to repair.');
  }
  if (repair && recheck) {
    lines.push('', `Repair: ${check.rebuild}: rebuilt the index from the log.`);
    if (repair.movedTo) lines.push(`  The former index is kept in ${repair.movedTo} (delete it once the store serves as it should).`);
    lines.push(repair.firstSegment === null
      ? '  The log holds no segment: the new index is empty.'
      : `  Replayed the log from segment ${repair.firstSegment}: ${plural(repair.replayed, 'event')} and ${plural(repair.changesReplayed, 'change')}; the index holds ${plural(repair.events, 'event')} (the log holds ${plural(check.log.records, 'record')}).`);
    if (repair.keptIn) lines.push(`  The open removed ${plural(repair.segmentFilesRemoved.length, 'segment file')} no replayed frame names (${repair.segmentFilesRemoved.join(', ')}): kept as they were in ${repair.keptIn}.`);
    if (repair.skipped > 0) lines.push(`  ${plural(repair.skipped, 'record')} named a file no frame holds and could not be indexed (docs/STORAGE.md, "Recovery").`);
    if (repair.salvaged > 0) lines.push(`  Salvaged ${plural(repair.salvaged, 'record')} the log lacked from the former index, written back into the log.`);
    if (repair.lost.length > 0) {
      lines.push(`  LOST: ${plural(repair.lost.length, 'event')} neither the log nor the former index could give back:`);
      for (const id of repair.lost.slice(0, 20)) lines.push(`    event ${id}`);
      if (repair.lost.length > 20) lines.push(`    ... and ${plural(repair.lost.length - 20, 'more event')}.`);
    }
    if (repair.salvageIncomplete) lines.push('  LOST?: the former index could not be read to its end: events it alone held may be lost unnamed.');
    lines.push(describeLedger(repair.sinks));
    lines.push('', 'Checked again after the repair:', ...describeCheck(recheck));
  }
  const final = recheck ?? check;
  const lost = repair !== null && (repair.lost.length > 0 || repair.salvageIncomplete);
  lines.push('', final.damage ? 'Damage found.' : lost ? 'Events were lost (above); what is left has no damage.' : 'No damage found.');
  if (final.damage && !repairAsked && !check.rebuild && (check.indexAgainstLog?.indexOnly ?? 0) > 0) {
    lines.push(`\`edge-events check --repair --data-dir ${check.dataDir}\` writes the records the index alone holds back into the log.`);
  }
  if (final.damage && !repairAsked && check.rebuild) lines.push(`${check.rebuild}: \`edge-events check --repair --data-dir ${check.dataDir}\` rebuilds the index from the log (docs/OPERATIONS.md, "Checking and repairing a data folder").`);
  return `${lines.join('\n')}\n`;
}

/** What the repair did with the shipping ledger: rebuilt for the sinks this command's environment configures. */
function describeLedger(sinks: readonly string[]): string {
  return sinks.length > 0
    ? `  Shipping ledger rebuilt for ${sinks.join(' and ')} (the sinks this environment configures): each ships every finalized event again.`
    : '  Shipping ledger: none rebuilt (--without-sinks).';
}

/** Why `--repair` made no rebuild although damage was found. */
function whyNoRebuild(check: CheckReport): string {
  const against = check.indexAgainstLog;
  const lacking = against ? against.indexOnly + against.indexedRecordsDamaged : 0;
  if (against && lacking > 0 && (against.badLocations.some((b) => b.side === 'index') || against.unindexedCount > 0)) {
    return `The index holds ${plural(lacking, 'event')} whose record frame is gone from the log or damaged there: a rebuild from the log would lose them.`;
  }
  return 'The damage is in the log, which a rebuild of the index cannot mend: what the damaged bytes held is lost.';
}

/**
 * The check's findings in plain words, one a line (docs/OPERATIONS.md, "Checking and repairing a
 * data folder"): the index file, the log, the quarantine, the index against the log.
 */
function describeCheck(check: CheckReport): string[] {
  const lines = [describeIndexFile(check), ...describeLog(check.log)];
  const { quarantine } = check;
  if (quarantine.ranges > 0) {
    lines.push(`Quarantine quarantine/: ${plural(quarantine.ranges, 'damaged range')} (${n(quarantine.bytes)} bytes, ${plural(quarantine.lostEvents, 'event')} lost) that earlier start-ups moved aside (docs/STORAGE.md, "Damage in the log").`);
  }
  const against = check.indexAgainstLog;
  if (!against) {
    if (check.index.state !== 'absent') lines.push('Index against the log: not checked (the index does not open).');
    return lines;
  }
  lines.push(...describeIndexAgainstLog(against));
  return lines;
}

/** The index file's line: its state, and the figures LMDB opens it with when sound. */
function describeIndexFile(check: CheckReport): string {
  const { index, log } = check;
  const indexFile = path.relative(check.dataDir, index.file);
  switch (index.state) {
    case 'sound':
      return `Index ${indexFile}: sound (${n(index.fileBytes ?? 0)} bytes, pages of ${n(index.pageSize ?? 0)} bytes, opens at transaction ${n(index.transaction ?? 0)}).`;
    case 'absent':
      return `Index ${indexFile}: missing or empty${log.segments > 0 ? ', while the log has segments: the store refuses to start on it' : ' (a new store)'}.`;
    case 'damaged':
      return `Index ${indexFile}: DAMAGED: ${index.problem}.`;
    case 'unreadable':
      return `Index ${indexFile}: the file checks, but LMDB cannot read it: ${index.problem}.`;
  }
}

/** The log's lines: its totals, then each damaged place, each tail of no frame, each segment shorter than committed. */
function describeLog(log: CheckReport['log']): string[] {
  const lines: string[] = [];
  const crcs = log.damageCount === 0 ? 'every frame whole, every CRC32C matching' : `${plural(log.damageCount, 'damaged place')}`;
  lines.push(`Log blobs/: ${plural(log.segments, 'segment')}, ${n(log.bytes)} bytes: ${plural(log.frames, 'frame')} (${plural(log.records, 'record')}, ${plural(log.copies, 'record copy', 'record copies')}, ${plural(log.changes, 'change')}, ${plural(log.tombstones, 'tombstone')}, ${plural(log.fileFrames, 'image or file', 'images and files')}); ${crcs}.`);
  for (const d of log.damage) {
    lines.push(d.what === 'crc'
      ? `  DAMAGED: segment ${d.segment}, bytes ${n(d.offset)} to ${n(d.end)}: ${FRAME_NAMES[d.kind ?? ''] ?? 'a frame'} (${d.id}) whose data fails its CRC32C.`
      : `  DAMAGED: segment ${d.segment}, bytes ${n(d.offset)} to ${n(d.end)}: no frame, with whole frames after them.`);
  }
  if (log.damageCount > log.damage.length) lines.push(`  ... and ${plural(log.damageCount - log.damage.length, 'more place')}.`);
  for (const t of log.tails) {
    lines.push(t.acknowledged
      ? `  DAMAGED: segment ${t.segment} ends in ${n(t.bytes)} bytes of no frame from byte ${n(t.offset)}, where the index counts committed frames: they are lost.`
      : `  Segment ${t.segment} ends in ${n(t.bytes)} bytes of no frame from byte ${n(t.offset)}: the torn tail of an unclean stop (or zeros written ahead), which the next start cuts.`);
  }
  for (const s of log.shortSegments) {
    lines.push(s.fileBytes === null
      ? `  DAMAGED: segment ${s.segment} is missing, with ${plural(s.liveBlobs, 'file')} the index places in it.`
      : `  DAMAGED: segment ${s.segment} is ${n(s.fileBytes)} bytes, shorter than the ${n(s.committed)} the index counts as committed.`);
  }
  return lines;
}

/** The lines of the index against the log: its totals, the file locations, the records indexed, the events it lacks or alone holds. */
function describeIndexAgainstLog(against: NonNullable<CheckReport['indexAgainstLog']>): string[] {
  const lines: string[] = [];
  const position = against.logPosition ? `segment ${against.logPosition.segment}, byte ${n(against.logPosition.offset)}` : 'none';
  lines.push(`Index against the log: ${plural(against.events, 'event')}, ${plural(against.files, 'file location')}; log position ${position}.`);
  if (against.readsAsNew) lines.push('  DAMAGED: the index reads as a new one (no log position, no entry for any segment on disk) while the log has segments: the store refuses to start on it.');
  if (against.metaForeign) lines.push('  DAMAGED: the index\'s meta database holds another database\'s keys (a page that is not its own): its log position is lost, and the store refuses to start on it.');
  if (against.unknownSegments.length > 0) {
    lines.push(`  DAMAGED: the index has no entry for segment${against.unknownSegments.length === 1 ? '' : 's'} ${against.unknownSegments.join(', ')} of blobs/, which hold${against.unknownSegments.length === 1 ? 's' : ''} records of events `
      + '(a page of the index lost): the store refuses to start rather than remove them; --repair rebuilds the index with their events.');
  }
  lines.push(against.badLocationCount === 0
    ? '  Every file location leads to its whole frame.'
    : `  DAMAGED: ${plural(against.badLocationCount, 'file location')} lead${against.badLocationCount === 1 ? 's' : ''} to no whole frame:`);
  for (const b of against.badLocations) lines.push(`    file ${b.fileId} (segment ${b.segment}, byte ${n(b.offset)}): ${b.why} (${b.side === 'log' ? 'damage in the log' : 'damage in the index'}).`);
  lines.push(`  ${plural(against.recordsIndexed, 'record')} of the log indexed; ${plural(against.recordsToReplay, 'record')} after the log position, which the next start replays; ${plural(against.deletedByCleanup, 'record')} of events a cleanup deleted.`);
  lines.push(`  Copies: ${plural(against.bothCopies, 'event')} in both the index and the log; ${plural(against.indexOnly, 'event')} in the index alone (docs/STORAGE.md, "Two copies of every record").`);
  if (against.unindexedCount > 0) {
    lines.push(`  DAMAGED: ${plural(against.unindexedCount, 'event')} logged before the log position ${against.unindexedCount === 1 ? 'is' : 'are'} not in the index, and no cleanup explains ${against.unindexedCount === 1 ? 'it' : 'them'}:`);
    for (const u of against.unindexed) lines.push(`    event ${u.eventId} (segment ${u.segment}, byte ${n(u.offset)})`);
  }
  if (against.recordsNotReadingBack > 0) {
    const one = against.recordsNotReadingBack === 1;
    lines.push(`  DAMAGED: ${plural(against.recordsNotReadingBack, 'record')} of the index ${one ? 'does' : 'do'} not read back as ${one ? 'its event' : 'their events'} (a changed byte in the record or its presented JSON): the store serves ${one ? 'it' : 'them'} so; --repair rebuilds the index from the log.`);
  }
  if (against.indexedRecordsDamaged > 0) {
    const one = against.indexedRecordsDamaged === 1;
    lines.push(`  ${plural(against.indexedRecordsDamaged, 'event')} of the index ${one ? 'has its' : 'have their'} record frame among the damage above: the index still serves ${one ? 'it' : 'them'}, a rebuild from the log would lose ${one ? 'it' : 'them'}.`);
  }
  if (against.indexOnly > 0) {
    const one = against.indexOnly === 1;
    lines.push(`  DAMAGED: ${plural(against.indexOnly, 'event')} of the index ${one ? 'has no whole record frame' : 'have no whole record frames'} in the log: the index is the only copy, and \`--repair\` writes ${one ? 'it' : 'them'} back into the log:`);
    for (const id of against.indexOnlyIds) lines.push(`    event ${id}`);
    if (against.indexOnly > against.indexOnlyIds.length) lines.push(`    ... and ${plural(against.indexOnly - against.indexOnlyIds.length, 'more event')}.`);
  }
  return lines;
}
