/**
 * Results files of the benchmarks that run beside bench.js (uploads.js, lifecycle.js): the
 * table, when and where it was measured, and how busy the machine was.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { repoRoot } from './store-process.js';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Writes `native-bench/<file>` with `table` under `title`, plus the run's context, and prints it.
 * @param {string} file e.g. RESULTS.uploads.md
 * @param {boolean} quick whether the --quick sizes were used
 */
export function writeResults(file, title, quick, table) {
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot }).toString().trim();
  const [load1] = os.loadavg();
  const text = [
    `# ${title}`,
    '',
    `Measured on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC (${quick ? 'quick sizes' : 'full sizes'}), store built from commit ${commit},`,
    `${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), Node ${process.version}; load average ${load1.toFixed(2)} when it ended`,
    `(above ~1 the machine was shared with other work and the figures understate the store).`,
    '',
    table,
    '',
  ].join('\n');
  fs.writeFileSync(path.join(here, file), text);
  console.log(text);
}
