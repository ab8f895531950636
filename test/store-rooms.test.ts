/**
 * The storage engine's rooms (docs/ARCHITECTURE.md, "The storage engine's rooms") are held by
 * the rules of .dependency-cruiser.cjs, which `npm run lint` runs: the deliberate violations
 * below, written into a scratch tree shaped like src/, fail dependency-cruiser, each named with its
 * rule, and the same tree without them passes. The repository's own src/ passes on every `npm test`.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { packageRoot } from '../src/paths.js';

const run = promisify(execFile);
const DEPCRUISE = path.join(packageRoot, 'node_modules', '.bin', 'depcruise');

/** Each violation: the file that breaks the rule, and what it imports. */
const VIOLATIONS: [rule: string, file: string, source: string][] = [
  ['the-store-has-one-entry-point', 'src/events/reader.ts', "import { StoreView } from '../store/read/store-view.js';\nexport const x = StoreView;\n"],
  ['record-is-the-floor', 'src/store/record/event-record.ts', "import { openDatabases } from '../index/lmdb-env.js';\nexport const x = openDatabases;\n"],
  ['log-knows-no-lmdb', 'src/store/log/segment-files.ts', "import { open } from 'lmdb';\nexport const x = open;\n"],
  ['log-knows-no-lmdb', 'src/store/log/blob-reader.ts', "import { openDatabases } from '../index/lmdb-env.js';\nexport const x = openDatabases;\n"],
  ['head-knows-no-files', 'src/store/head/head.ts', "import fs from 'node:fs';\nexport const x = fs;\n"],
  ['head-knows-no-files', 'src/store/head/head.ts', "import { segmentFileName } from '../log/segment-files.js';\nexport const x = segmentFileName;\n"],
  ['blocks-stand-below-the-head', 'src/store/block/block-reader.ts', "import { open } from 'lmdb';\nexport const x = open;\n"],
  ['blocks-stand-below-the-head', 'src/store/block/block-writer.ts', "import { EventStore } from '../engine/event-store.js';\nexport const x = EventStore;\n"],
  ['only-the-engine-writes', 'src/store/read/store-view.ts', "import { EventStore } from '../engine/event-store.js';\nexport const x = EventStore;\n"],
  ['only-the-engine-appends', 'src/store/ledger/sink-ledger.ts', "import { SegmentAppender } from '../log/blob-log.js';\nexport const x = SegmentAppender;\n"],
];

/** The modules every violation may import, each importing nothing. */
const MODULES: Record<string, string> = {
  'src/store/index.ts': 'export const entry = 1;\n',
  'src/store/index/lmdb-env.ts': 'export const openDatabases = 1;\n',
  'src/store/read/store-view.ts': 'export const StoreView = 1;\n',
  'src/store/engine/event-store.ts': 'export const EventStore = 1;\n',
  'src/store/log/blob-log.ts': 'export const SegmentAppender = 1;\n',
  'src/store/log/segment-files.ts': 'export const segmentFileName = 1;\n',
};

/** A scratch tree with the repository's rules, its TypeScript settings and `node_modules`, holding `files`. */
function scratchTree(t: Test, files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'store-rooms-'));
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
  fs.copyFileSync(path.join(packageRoot, '.dependency-cruiser.cjs'), path.join(root, '.dependency-cruiser.cjs'));
  fs.writeFileSync(path.join(root, 'tsconfig.test.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext' }, include: ['src'] }));
  fs.symlinkSync(path.join(packageRoot, 'node_modules'), path.join(root, 'node_modules'));
  for (const [file, source] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), source);
  }
  return root;
}

/** dependency-cruiser over the tree's src/ as `npm run lint` runs it: its exit code and report. */
async function cruise(root: string): Promise<{ code: number; report: string }> {
  try {
    const { stdout } = await run(DEPCRUISE, ['--config', '.dependency-cruiser.cjs', '--output-type', 'err-long', 'src'], { cwd: root });
    return { code: 0, report: stdout };
  } catch (err) {
    const { code, stdout } = err as { code: number; stdout: string };
    return { code, report: stdout };
  }
}

t.test('each deliberate violation of the rooms fails the lint, naming its rule', async (t) => {
  // One tree holding every violation, one run: a file breaking two rules holds both imports.
  const files: Record<string, string> = { ...MODULES };
  const written = new Set<string>();
  VIOLATIONS.forEach(([, file, source], i) => {
    const renamed = source.replace('export const x', `export const x${i}`);
    files[file] = written.has(file) ? files[file] + renamed : renamed;
    written.add(file);
  });
  const { code, report } = await cruise(scratchTree(t, files));
  t.not(code, 0, 'the lint fails');
  for (const [rule, file, source] of VIOLATIONS) {
    const target = /from '([^']+)'/.exec(source)![1];
    const shown = target.startsWith('.') ? path.join(path.dirname(file), target).replace(/\.js$/, '.ts') : target.replace(/^node:/, '');
    t.match(report, `error ${rule}: ${file} → `, `${file}: ${rule} named`);
    t.ok(report.split('\n').some((line) => line.includes(`error ${rule}: ${file} → `) && line.includes(shown)), `${file} → ${shown}: ${rule}`);
  }
});

t.test('the same tree without a violation passes', async (t) => {
  const allowed = {
    ...MODULES,
    'src/events/reader.ts': "import { entry } from '../store/index.js';\nexport const x = entry;\n",
    'src/store/head/head.ts': "import type { SegmentAppender } from '../log/blob-log.js';\nexport type X = typeof SegmentAppender;\n",
    'src/store/block/block-reader.ts': "import type { Key } from 'lmdb';\nimport { openDatabases } from '../index/lmdb-env.js';\nexport type K = Key;\nexport const x = openDatabases;\n",
    'src/store/engine/checkpoint-writer.ts': "import { openDatabases } from '../index/lmdb-env.js';\nimport { SegmentAppender } from '../log/blob-log.js';\nexport const x = [openDatabases, SegmentAppender];\n",
  };
  const { code, report } = await cruise(scratchTree(t, allowed));
  t.equal(code, 0, report);
});
