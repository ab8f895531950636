/**
 * Comments that name an error code with its HTTP status, e.g. "event_not_found (404)", must give
 * the status the registry gives it (src/errors.ts; docs/API.md, "Errors"): the registry is the
 * one place a status is decided, and a comment that disagrees with it misleads its reader.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { errorRegistry, type ErrorCode } from '../src/errors.js';

const SRC = path.join(import.meta.dirname, '..', 'src');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

t.test('every "code (status)" in src/ comments gives the registry status of that code', (t) => {
  // A code, then an opening parenthesis and three digits: "disk_full (507)", "validation_failed (422: label)".
  const mention = /`?\b([a-z]+(?:_[a-z]+)+)`? \((\d{3})\b/g;
  const wrong: string[] = [];
  let checked = 0;
  for (const file of sourceFiles(SRC)) {
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      for (const [, code, status] of line.matchAll(mention)) {
        if (!(code in errorRegistry)) continue;
        checked++;
        const registered = errorRegistry[code as ErrorCode].status;
        if (registered !== Number(status)) wrong.push(`${path.relative(SRC, file)}:${i + 1}: ${code} (${status}), registry ${registered}`);
      }
    });
  }
  t.ok(checked >= 40, `${checked} mentions checked`);
  t.same(wrong, [], 'no comment gives a code another status than the registry');
  t.end();
});
