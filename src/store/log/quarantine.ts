/**
 * The quarantine (docs/STORAGE.md, "Damage in the log"): bytes of a segment that replay went
 * past because they hold no whole frame, or a create whose image fails its CRC, are copied whole
 * into DATA_DIR/quarantine/ with a description beside them, so that nothing damaged is thrown
 * away and the damage outlives the replay that found it (/stats, /metrics and the operator page
 * read it from here).
 *
 *   quarantine/seg-NNNNNNNN-<offset>.bin    the bytes, as they were in the segment
 *   quarantine/seg-NNNNNNNN-<offset>.json   a QuarantinedBytes
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { segmentFileName, syncDirectory } from './segment-files.js';

/** Where in the log damage was found, and what it cost. Offsets in bytes from the segment's start. */
export interface LogDamage {
  segment: number;
  /** First byte of the damage. */
  offset: number;
  /** First byte after it. */
  end: number;
  /** Events whose create is lost with these bytes, where the frames still name them. */
  lostEvents: string[];
  /** Events a lost update (finalize, attach) was made to, where the frames still name them (`lost_changes` in /stats). */
  lostChanges: string[];
  /**
   * The bytes were gone, not damaged: the segment file was missing, or shorter than the index
   * says it was written (`committed`). Nothing could be copied; the entry's .bin is empty.
   */
  missing?: true;
  /** Files (images, attachments) the index places in missing bytes: their events stay, without them. */
  lostFiles?: string[];
}

/** A quarantine entry: the damage, where its bytes were copied and when (the .json file). */
export interface QuarantinedBytes extends LogDamage {
  /** File name of the copied bytes inside quarantine/. */
  file: string;
  /** When the replay found it (ISO 8601). */
  foundAt: string;
}

/** What the quarantine holds, for /stats and /metrics (docs/API.md, "Statistics"). */
export interface QuarantineSummary {
  /** Damaged ranges quarantined. */
  ranges: number;
  /** Bytes they hold. */
  bytes: number;
  /** Creates known lost in them. */
  lostEvents: number;
  /** The newest entries, newest first (at most 20). */
  recent: QuarantinedBytes[];
}

/** DATA_DIR/quarantine. */
export function quarantineDirOf(dataDir: string): string {
  return path.join(dataDir, 'quarantine');
}

function entryName(segment: number, offset: number): string {
  return `${segmentFileName(segment).replace(/\.blob$/, '')}-${offset}`;
}

/**
 * Copies the damaged bytes of `damage` out of the segment file in `blobsDir` into `quarantineDir`
 * (none when they are `missing`), with its description, durably (both files and the folder
 * synced). Quarantining the same damage again (a second replay of the same log after another
 * crash, or a missing segment at every start) replaces the entry with the same bytes.
 * @returns the entry written
 * @throws the fs error of a failed read or write
 */
export async function quarantine(blobsDir: string, quarantineDir: string, damage: LogDamage): Promise<QuarantinedBytes> {
  await fsp.mkdir(quarantineDir, { recursive: true });
  const name = entryName(damage.segment, damage.offset);
  const entry: QuarantinedBytes = { ...damage, file: `${name}.bin`, foundAt: new Date().toISOString() };
  if (damage.missing) await fsp.writeFile(path.join(quarantineDir, entry.file), '', { flush: true });
  else await copyDamagedBytes(path.join(blobsDir, segmentFileName(damage.segment)), path.join(quarantineDir, entry.file), damage);
  const description = path.join(quarantineDir, `${name}.json`);
  await fsp.writeFile(description, `${JSON.stringify(entry, null, 2)}\n`, { flush: true });
  await syncDirectory(quarantineDir);
  return entry;
}

/** Copies the bytes of `damage` from `segmentFile` into `targetFile`, durably. */
async function copyDamagedBytes(segmentFile: string, targetFile: string, damage: LogDamage): Promise<void> {
  const source = await fsp.open(segmentFile, 'r');
  try {
    const target = await fsp.open(targetFile, 'w');
    try {
      const chunk = Buffer.allocUnsafe(Math.min(1024 * 1024, Math.max(1, damage.end - damage.offset)));
      for (let at = damage.offset; at < damage.end;) {
        const { bytesRead } = await source.read(chunk, 0, Math.min(chunk.length, damage.end - at), at);
        if (bytesRead === 0) break;
        await target.write(chunk.subarray(0, bytesRead));
        at += bytesRead;
      }
      await target.datasync();
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/**
 * Reads what the quarantine holds. An entry whose description does not parse is counted by its
 * bytes alone.
 * @throws the fs error when quarantine/ exists but cannot be read
 */
export function readQuarantine(quarantineDir: string): QuarantineSummary {
  const summary: QuarantineSummary = { ranges: 0, bytes: 0, lostEvents: 0, recent: [] };
  if (!fs.existsSync(quarantineDir)) return summary;
  const entries: QuarantinedBytes[] = [];
  for (const name of fs.readdirSync(quarantineDir)) {
    if (!name.endsWith('.bin')) continue;
    summary.ranges++;
    summary.bytes += fs.statSync(path.join(quarantineDir, name)).size;
    try {
      const entry = JSON.parse(fs.readFileSync(path.join(quarantineDir, name.replace(/\.bin$/, '.json')), 'utf8')) as QuarantinedBytes;
      summary.lostEvents += entry.lostEvents.length;
      entries.push(entry);
    } catch {
      // a description cut by a crash before its sync: the bytes are counted, nothing more is known
    }
  }
  summary.recent = entries.sort((a, b) => b.foundAt.localeCompare(a.foundAt) || b.segment - a.segment || b.offset - a.offset).slice(0, 20);
  return summary;
}
