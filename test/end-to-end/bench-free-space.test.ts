/**
 * The free space `edge-events bench` leaves on DATA_DIR's file system for the store that serves
 * there (`--keep-free-mib`; docs/OPERATIONS.md, "Measuring the box: edge-events bench", "The disk
 * it shares"), the built binary as an operator runs it: a disk without room is refused before a
 * server starts, and a run is stopped once another writer takes the free space under it, on a
 * real tmpfs; nothing is left behind either way.
 */
import t from 'tap';
import type { Test } from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../support/cli-process.js';

/** A folder whose `data` child is the DATA_DIR the bench is given (not made: the bench writes beside it). */
function parentFolder(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-free-space-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('a file system without room for the run is refused before a server starts, and nothing is left', async (t) => {
  const parent = parentFolder(t);
  const run = await runCli(['bench', '--keep-free-mib', '1000000000', '--json'], { env: { DATA_DIR: path.join(parent, 'data') } });
  t.equal(run.code, 1);
  const { error } = JSON.parse(run.stderr);
  t.match(error.message, new RegExp(`^\\d+ MiB are free on the file system of DATA_DIR ${path.join(parent, 'data')}: the bench leaves 1000000000 MiB of them free \\(--keep-free-mib\\) and needs 256 MiB more$`));
  t.match(error.hint, /Free some space .* or give --keep-free-mib less/);
  t.equal(run.stdout, '');
  t.same(fs.readdirSync(parent), [], 'the folder made to measure the room was removed');
});

t.test('a run during which the file system falls under --keep-free-mib is stopped, and nothing is left (a 360 MiB tmpfs)', async (t) => {
  const dir = parentFolder(t);
  // The bench on a 360 MiB tmpfs mounted over `dir` in a mount namespace of its own (unshare(1)).
  // Once its store has started, another writer on the box takes all but 60 MiB of the free space
  // (a file of zeros). Then what `dir` holds, as `left:<names>`.
  const script = [
    'mount -t tmpfs -o size=360m tmpfs "$0" || exit 9',
    '"$@" & bench=$!',
    'until [ -d "$(echo "$0"/.edge-events-bench-*/store)" ]; do kill -0 $bench 2>/dev/null || break; sleep 0.05; done',
    'free=$(df -B1M --output=avail "$0" | tail -1)',
    'dd if=/dev/zero of="$0/other-writer" bs=1M count=$((free - 60)) 2>/dev/null',
    'wait $bench; code=$?',
    'rm -f "$0/other-writer"',
    'echo "left:$(ls -A "$0" | tr "\\n" " ")"',
    'exit $code',
  ].join('\n');
  const run = await runCli(['bench', '--keep-free-mib', '100', '--seconds-per-step', '2'], {
    prefix: ['unshare', '--mount', '--map-root-user', 'sh', '-c', script, dir],
    env: { DATA_DIR: path.join(dir, 'data') },
  });
  t.equal(run.code, 1, run.stderr);
  const fell = /error: the file system of DATA_DIR \S+ fell to (\d+) MiB free during the run, under the 100 MiB it leaves free \(--keep-free-mib\): the bench stopped its servers/.exec(run.stderr);
  t.ok(fell, run.stderr);
  t.ok(Number(fell?.[1]) < 100 && Number(fell?.[1]) > 0, `stopped with ${fell?.[1]} MiB free`);
  t.notMatch(run.stderr, /ENOSPC/);
  t.match(run.stdout, /^left:\s*$/m, 'the bench\'s folder was removed');
});
