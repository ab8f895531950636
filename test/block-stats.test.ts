/**
 * The power-loss harness's check that no write reached a device while its image was copied
 * (scripts/lib/block-stats.ts), over `/sys/block/<name>/stat` lines as the Linux kernel writes
 * them (Documentation/block/stat.rst).
 */
import t from 'tap';
import { parseBlockStat, quietBetween, sectorsBetween } from '../scripts/lib/block-stats.js';

/** A loop device's line with its 17 fields: 1 write of 8 sectors, 1 flush, nothing in flight. */
const IDLE = '      53        0     2122        2        1        0        8        0        0        4        2        0        0        0        0        1        0\n';

t.test('the fields of a stat line: writes, sectors written, in flight, discards', async (t) => {
  t.same(parseBlockStat(IDLE), { writes: 1, sectorsWritten: 8, inFlight: 0, discards: 0, sectorsDiscarded: 0 });
  t.same(parseBlockStat('1 0 2 0 11 7 136 3 2 16 15 4 0 64 0 9 1'), { writes: 11, sectorsWritten: 136, inFlight: 2, discards: 4, sectorsDiscarded: 64 });
  // Kernels before 4.18 give eleven fields: no discards.
  t.same(parseBlockStat('1 0 2 0 11 7 136 3 0 16 15'), { writes: 11, sectorsWritten: 136, inFlight: 0, discards: 0, sectorsDiscarded: 0 });
  t.throws(() => parseBlockStat('1 2 3'), /not a block device stat line/);
  t.throws(() => parseBlockStat(''), /not a block device stat line/);
});

t.test('quiet only when no write or discard completed and none was in flight at either reading', async (t) => {
  const idle = parseBlockStat(IDLE);
  t.ok(quietBetween(idle, { ...idle }));
  // Reads and flushes change no content.
  t.ok(quietBetween(idle, parseBlockStat(IDLE.replace('      53', '      99'))));
  t.notOk(quietBetween(idle, { ...idle, writes: 2, sectorsWritten: 16 }));
  t.notOk(quietBetween(idle, { ...idle, discards: 1, sectorsDiscarded: 64 }));
  t.notOk(quietBetween({ ...idle, inFlight: 1 }, idle), 'a write in flight at the first reading may land during the copy');
  t.notOk(quietBetween(idle, { ...idle, inFlight: 1 }), 'a write in flight at the second reading may have begun to land');
  t.equal(sectorsBetween(idle, { ...idle, writes: 3, sectorsWritten: 24, discards: 1, sectorsDiscarded: 8 }), 24);
});
