#!/usr/bin/env node
/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time per function and the total
 * (inclusive) time of the heaviest call paths' functions, so a missed target can be traced to
 * what dominates the server's CPU.
 *
 *   node profile-summary.js <file.cpuprofile> [top=25]
 */
import fs from 'node:fs';
import path from 'node:path';

/**
 * Reads a profile and returns per-function self and total milliseconds, heaviest self first.
 * @param {string} file path of a .cpuprofile
 * @returns {{ totalMs: number, rows: { name: string, selfMs: number, totalMs: number }[] }}
 */
export function summariseProfile(file) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);

  const selfUs = new Map();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

  const label = (n) => {
    const { functionName, url, lineNumber } = n.callFrame;
    const where = url ? `${path.basename(url)}:${lineNumber + 1}` : '';
    return `${functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
  };
  const rows = new Map();
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    totalUs += us;
    const row = rows.get(label(nodes.get(id))) ?? { selfUs: 0, totalUs: 0 };
    row.selfUs += us;
    rows.set(label(nodes.get(id)), row);
    // Inclusive time: charge every distinct function on the stack once.
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const name = label(nodes.get(at));
      if (seen.has(name)) continue;
      seen.add(name);
      const r = rows.get(name) ?? { selfUs: 0, totalUs: 0 };
      r.totalUs += us;
      rows.set(name, r);
    }
  }
  const list = [...rows].map(([name, r]) => ({ name, selfMs: r.selfUs / 1000, totalMs: r.totalUs / 1000 }));
  return { totalMs: totalUs / 1000, rows: list.sort((a, b) => b.selfMs - a.selfMs) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, topArg = '25'] = process.argv.slice(2);
  if (!file) {
    console.error('usage: node profile-summary.js <file.cpuprofile> [top]');
    process.exit(2);
  }
  const top = Number(topArg);
  const { totalMs, rows } = summariseProfile(file);
  const pct = (ms) => `${((100 * ms) / totalMs).toFixed(1).padStart(5)}%`;
  console.log(`${file}: ${(totalMs / 1000).toFixed(2)} s sampled\n\nself time`);
  for (const r of rows.slice(0, top)) console.log(`  ${pct(r.selfMs)}  ${r.name}`);
  console.log('\ninclusive time');
  for (const r of [...rows].sort((a, b) => b.totalMs - a.totalMs).slice(0, top)) console.log(`  ${pct(r.totalMs)}  ${r.name}`);
}
