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
 * @param {{ loadAtStart?: number }} [context] loadAtStart: the 1-minute load average when the
 *   run began (os.loadavg()[0]), reported beside the one at its end
 */
export function writeResults(file, title, quick, table, { loadAtStart } = {}) {
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot }).toString().trim();
  const [load1] = os.loadavg();
  const load = loadAtStart === undefined ? `load average ${load1.toFixed(2)} when it ended`
    : `load average ${loadAtStart.toFixed(2)} when it began, ${load1.toFixed(2)} when it ended`;
  const text = [
    `# ${title}`,
    '',
    `Measured on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC (${quick ? 'quick sizes' : 'full sizes'}), store built from commit ${commit},`,
    `${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), Node ${process.version}; ${load}`,
    `(above ~1 the machine was shared with other work and the figures understate the store).`,
    '',
    table,
    '',
  ].join('\n');
  fs.writeFileSync(path.join(here, file), text);
  console.log(text);
}
