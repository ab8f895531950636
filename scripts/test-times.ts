/**
 * `npm run test:times [-- --top N]`: each test file's wall time in the last tap run, slowest
 * first, from the results tap keeps in `.tap/test-results/` (one `.tap` file per test file,
 * ending with its `# time=` line), and their sum. The table docs/ARCHITECTURE.md, "Tests", gives
 * comes from it; run it after `npm test` or `npm run test:full`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { numberOption } from './lib/args.js';

const RESULTS = path.join('.tap', 'test-results');

/** Every `.tap` file under `dir`, with its path relative to `RESULTS`. */
function resultFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.tap'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** The file's total time (seconds): its last top-level `# time=` line, or undefined when it has none. */
function fileSeconds(file: string): number | undefined {
  const times = [...fs.readFileSync(file, 'utf8').matchAll(/^# time=([\d.]+)ms$/gm)];
  const last = times.at(-1);
  return last ? Number(last[1]) / 1000 : undefined;
}

const top = numberOption('top', 20);
const timed = resultFiles(RESULTS)
  .map((file) => ({ name: path.relative(RESULTS, file).replace(/\.tap$/, ''), seconds: fileSeconds(file) }))
  .filter((entry): entry is { name: string; seconds: number } => entry.seconds !== undefined)
  .sort((a, b) => b.seconds - a.seconds);
if (timed.length === 0) {
  console.error(`no results in ${RESULTS}: run the tests first`);
  process.exit(1);
}
const total = timed.reduce((sum, { seconds }) => sum + seconds, 0);
console.log('| file | s |\n|---|---|');
for (const { name, seconds } of timed.slice(0, top)) console.log(`| ${name} | ${seconds.toFixed(1)} |`);
console.log(`\n${timed.length} files, ${total.toFixed(0)} s of test time in all`);
