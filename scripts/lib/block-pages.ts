/**
 * Where the blocks' records lie in `blocks/*.eeb`, for the disk-fault harness: each 4 KiB page of a
 * block file that holds a byte of a record, and the events whose records it holds (docs/STORAGE.md,
 * "Blocks"). Read with the store's own block reader, on a folder no store runs on; a folder
 * cleanly stopped has no block its catalogue does not name.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BlockReader } from '../../src/store/block/block-reader.js';
import { blocksDirOf } from '../../src/store/read/stored-events.js';
import type { RecordPage } from './index-pages.js';
import { PAGE_BYTES } from './fault-injection.js';

/** The record pages of every block file in the data folder `dataDir`, by file and page. */
export function blockRecordPages(dataDir: string): RecordPage[] {
  const dir = blocksDirOf(dataDir);
  const names = fs.existsSync(dir) ? fs.readdirSync(dir).filter((name) => name.endsWith('.eeb')).sort() : [];
  const pages: RecordPage[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    const fileBytes = fs.statSync(file).size;
    const block = BlockReader.open(file);
    try {
      const byPage = new Map<number, RecordPage>();
      for (const { id, createdAt } of block.idEntries()) {
        const { offset, length } = block.recordPlace(createdAt)!;
        for (let page = Math.floor(offset / PAGE_BYTES); page * PAGE_BYTES < offset + length; page++) {
          const entry = byPage.get(page) ?? { page, file: path.join('blocks', name), fileBytes, events: [], nodes: [] };
          entry.events.push(id);
          entry.nodes.push({ from: offset, to: offset + length, event: id });
          byPage.set(page, entry);
        }
      }
      pages.push(...[...byPage.values()].sort((a, b) => a.page - b.page));
    } finally {
      block.close();
    }
  }
  return pages;
}
