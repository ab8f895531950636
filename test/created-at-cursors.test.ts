/**
 * Created-at cursors (src/store/index/created-at-cursors.ts; docs/ARCHITECTURE.md, "The path of a
 * list"), over a real LMDB in a temp dir with the store's own databases and index key shapes
 * (src/store/index/index-keys.ts): an index range and the primary key range sought in both
 * directions within inclusive [lo, hi] bounds, the union of several ranges (a multi-value
 * filter) and a driving cursor probing the others (several filters). Each cursor's walk is
 * checked against the same walk over a sorted array.
 */
import t from 'tap';
import type { Key } from 'lmdb';
import { KeyRangeCursor, ProbeCursor, UnionCursor, type CreatedAtCursor, type Direction } from '../src/store/index/created-at-cursors.js';
import { EMPTY, INDEXED_FIELDS } from '../src/store/index/index-keys.js';
import { openDatabases, type StoreDatabases } from '../src/store/index/lmdb-env.js';
import { tempDataDir } from './support/store-server.js';

const DEVICE = INDEXED_FIELDS.device_id;
const SCHEMA = INDEXED_FIELDS.event_schema;

/** A deterministic pseudo-random sequence (xorshift32), so a failure replays. */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** Every value of a cursor from the start in `dir`, advancing past each one as the store does. */
function walk(cursor: CreatedAtCursor, dir: Direction): number[] {
  const values: number[] = [];
  for (let v = cursor.seek(dir === 'asc' ? -Infinity : Infinity); v !== undefined; v = cursor.seek(dir === 'asc' ? v + 1 : v - 1)) {
    values.push(v);
    if (values.length > 100_000) throw new Error('the cursor never ends');
  }
  cursor.close();
  return values;
}

/** What `seek(ts)` must answer over the sorted values `all`, within [lo, hi]. */
function expectedSeek(all: number[], ts: number, lo: number, hi: number, dir: Direction): number | undefined {
  const inRange = all.filter((v) => v >= lo && v <= hi);
  return dir === 'asc' ? inRange.find((v) => v >= ts) : [...inRange].reverse().find((v) => v <= ts);
}

/** The sorted created_at values put under each index prefix, and in `events`. */
interface Fixture {
  dbs: StoreDatabases;
  byDevice: Map<string, number[]>;
  bySchema: Map<string, number[]>;
  all: number[];
}

/**
 * 600 events at created_at 1000, 1010, ... (µs, unique, as the store assigns them), each with a
 * device (a, b, c, or the neighbouring prefixes 'a\u0000' and 'ab') and a schema (x or y);
 * written as the store writes them: the record under created_at in `events`, and one
 * `[field, value, created_at]` key per indexed field in `index`.
 */
async function fixture(): Promise<Fixture> {
  const dbs = openDatabases(tempDataDir());
  const rand = random(20260101);
  const devices = ['a', 'b', 'c', 'a\u0000', 'ab'];
  const byDevice = new Map<string, number[]>(devices.map((d) => [d, []]));
  const bySchema = new Map<string, number[]>([['x', []], ['y', []]]);
  const all: number[] = [];
  await dbs.root.transaction(() => {
    for (let i = 0; i < 600; i++) {
      const ts = 1000 + i * 10;
      const device = devices[Math.floor(rand() * devices.length)];
      const schema = rand() < 0.3 ? 'x' : 'y';
      dbs.events.putSync(ts, Buffer.from(`record ${i}`));
      dbs.index.putSync([DEVICE, device, ts], EMPTY);
      dbs.index.putSync([SCHEMA, schema, ts], EMPTY);
      byDevice.get(device)!.push(ts);
      bySchema.get(schema)!.push(ts);
      all.push(ts);
    }
  });
  return { dbs, byDevice, bySchema, all };
}

const { dbs, byDevice, bySchema, all } = await fixture();
t.teardown(() => dbs.root.close());
const first = all[0];
const last = all[all.length - 1];
const deviceA = byDevice.get('a')!;

t.test('the fixture holds enough of each value', async (t) => {
  t.ok(deviceA.length > 50, `${deviceA.length} events of device a`);
  t.ok(bySchema.get('x')!.length > 50, `${bySchema.get('x')!.length} events of schema x`);
});

t.test('an index range walks exactly its values within [lo, hi], bounds included, in both directions', async (t) => {
  const lo = deviceA[3];
  const hi = deviceA[deviceA.length - 4]; // both bounds are values of the range
  const inside = deviceA.filter((v) => v >= lo && v <= hi);
  t.same(walk(new KeyRangeCursor(dbs.index, [DEVICE, 'a'], lo, hi, 'asc'), 'asc'), inside);
  t.same(walk(new KeyRangeCursor(dbs.index, [DEVICE, 'a'], lo, hi, 'desc'), 'desc'), [...inside].reverse());
  t.same(walk(new KeyRangeCursor(dbs.index, [DEVICE, 'a'], lo + 1, hi - 1, 'asc'), 'asc'), inside.slice(1, -1), 'bounds one past a value exclude it');
  t.same(walk(new KeyRangeCursor(dbs.index, [DEVICE, 'a'], -Infinity, Infinity, 'asc'), 'asc'), deviceA, 'unbounded: every value');
  t.same(walk(new KeyRangeCursor(dbs.index, [DEVICE, 'a'], -Infinity, Infinity, 'desc'), 'desc'), [...deviceA].reverse());
});

t.test('neighbouring prefixes never leak into a range', async (t) => {
  for (const device of ['a', 'a\u0000', 'ab', 'b']) {
    const values = byDevice.get(device)!;
    t.same(walk(new KeyRangeCursor(dbs.index, [DEVICE, device], first, last, 'asc'), 'asc'), values, `${JSON.stringify(device)}: its own ${values.length} values`);
  }
  t.same(walk(new KeyRangeCursor(dbs.index, [DEVICE, ''], first, last, 'asc'), 'asc'), [], 'the empty value has none');
});

t.test('seeks, near (stepped) and far (reopened), answer the first value at or after the target', async (t) => {
  const rand = random(7);
  let checked = 0;
  for (const dir of ['asc', 'desc'] as Direction[]) {
    for (let run = 0; run < 40; run++) {
      const lo = first + Math.floor(rand() * 3000);
      const hi = lo + Math.floor(rand() * 4000);
      const cursor = new KeyRangeCursor(dbs.index, [DEVICE, 'a'], lo, hi, dir);
      let ts = dir === 'asc' ? lo - 50 : hi + 50;
      while (ts >= first - 100 && ts <= last + 100) {
        const want = expectedSeek(deviceA, ts, lo, hi, dir);
        const got = cursor.seek(ts);
        if (got !== want) {
          t.fail(`${dir} [${lo}, ${hi}] seek(${ts}) answered ${got}, expected ${want}`);
          break;
        }
        checked++;
        // Small steps stay on the open iterator, large ones reopen it.
        const jump = rand() < 0.5 ? 1 + Math.floor(rand() * 30) : 100 + Math.floor(rand() * 1500);
        ts = dir === 'asc' ? ts + jump : ts - jump;
      }
      cursor.close();
    }
  }
  t.ok(checked > 500, `${checked} seeks checked against the sorted values`);
});

t.test('a seek never moves back, and repeating one answers the same value', async (t) => {
  const cursor = new KeyRangeCursor(dbs.index, [DEVICE, 'a'], first, last, 'asc');
  const v = cursor.seek(deviceA[10])!;
  t.equal(v, deviceA[10]);
  t.equal(cursor.seek(deviceA[10]), v, 'the same target: the same value');
  t.equal(cursor.seek(deviceA[5]), v, 'an earlier target: still the current value');
  t.equal(cursor.seek(v + 1), deviceA[11]);
  cursor.close();
});

t.test('empty ranges and exhausted cursors answer undefined, and stay so', async (t) => {
  const cases: [string, Key[], number, number][] = [
    ['lo above hi', [DEVICE, 'a'], deviceA[20], deviceA[19]],
    ['a window between two values', [DEVICE, 'a'], deviceA[20] + 1, deviceA[21] - 1],
    ['before every value', [DEVICE, 'a'], 0, first - 1],
    ['after every value', [DEVICE, 'a'], last + 1, last + 1_000_000],
    ['a value nothing has', [DEVICE, 'zz'], -Infinity, Infinity],
    ['an empty events window', [], last + 1, Infinity],
  ];
  for (const [name, prefix, lo, hi] of cases) {
    const db = prefix.length === 0 ? dbs.events : dbs.index;
    for (const dir of ['asc', 'desc'] as Direction[]) {
      const cursor = new KeyRangeCursor(db, prefix, lo, hi, dir);
      t.same([cursor.seek(dir === 'asc' ? -Infinity : Infinity), cursor.seek(lo), cursor.seek(hi)], [undefined, undefined, undefined], `${name}, ${dir}`);
      cursor.close();
    }
  }
  const cursor = new KeyRangeCursor(dbs.index, [DEVICE, 'a'], first, last, 'asc');
  t.equal(cursor.seek(deviceA[deviceA.length - 1]), deviceA[deviceA.length - 1]);
  t.same([cursor.seek(deviceA[deviceA.length - 1] + 1), cursor.seek(last + 5)], [undefined, undefined], 'past the last value: exhausted');
});

t.test('a range of one value, at both bounds', async (t) => {
  const only = deviceA[7];
  for (const dir of ['asc', 'desc'] as Direction[]) {
    t.same(walk(new KeyRangeCursor(dbs.index, [DEVICE, 'a'], only, only, dir), dir), [only], dir);
    t.same(walk(new KeyRangeCursor(dbs.events, [], only, only, dir), dir), [only], `${dir}, primary key`);
  }
});

t.test('the primary key cursor walks created_at in `events` within [lo, hi], both directions', async (t) => {
  const lo = all[100];
  const hi = all[450];
  t.same(walk(new KeyRangeCursor(dbs.events, [], lo, hi, 'asc'), 'asc'), all.slice(100, 451));
  t.same(walk(new KeyRangeCursor(dbs.events, [], lo, hi, 'desc'), 'desc'), all.slice(100, 451).reverse());
  t.same(walk(new KeyRangeCursor(dbs.events, [], lo - 5, hi + 5, 'asc'), 'asc'), all.slice(100, 451), 'bounds between values');
  const cursor = new KeyRangeCursor(dbs.events, [], -Infinity, Infinity, 'desc');
  t.same([cursor.seek(Infinity), cursor.seek(all[300] + 3), cursor.seek(all[3])], [last, all[300], all[3]], 'seeks down, near and far');
  cursor.close();
});

t.test('a union walks the merged values of its parts in order, an empty part included', async (t) => {
  const devices = ['a', 'c', 'ab'];
  const merged = devices.flatMap((d) => byDevice.get(d)!).sort((x, y) => x - y);
  const lo = all[50];
  const hi = all[550];
  const inside = merged.filter((v) => v >= lo && v <= hi);
  for (const dir of ['asc', 'desc'] as Direction[]) {
    const parts = [...devices, 'nothing'].map((d) => new KeyRangeCursor(dbs.index, [DEVICE, d], lo, hi, dir));
    t.same(walk(new UnionCursor(parts, dir), dir), dir === 'asc' ? inside : [...inside].reverse(), `${dir}: ${inside.length} values`);
  }
  const union = new UnionCursor([new KeyRangeCursor(dbs.index, [DEVICE, 'b'], lo, hi, 'asc'), new KeyRangeCursor(dbs.index, [DEVICE, 'c'], lo, hi, 'asc')], 'asc');
  const bc = [...byDevice.get('b')!, ...byDevice.get('c')!].sort((x, y) => x - y);
  const target = bc.find((v) => v > all[300])!;
  t.equal(union.seek(all[300] + 1), target, 'a seek lands on the nearest value of either part');
  union.close();
  t.same(walk(new UnionCursor([], 'asc'), 'asc'), [], 'a union of nothing is empty');
});

t.test('a driving cursor probed by the others walks exactly the intersection, in both directions', async (t) => {
  const lo = all[20];
  const hi = all[580];
  const schemaX = new Set(bySchema.get('x'));
  const aOrB = [...deviceA, ...byDevice.get('b')!].sort((x, y) => x - y);
  const wanted = aOrB.filter((v) => v >= lo && v <= hi && schemaX.has(v));
  t.ok(wanted.length > 10, `${wanted.length} events are device a or b and schema x`);
  const probeSchema = (ts: number) => dbs.index.doesExist([SCHEMA, 'x', ts]);
  const probeDevice = (ts: number) => ['a', 'b'].some((d) => dbs.index.doesExist([DEVICE, d, ts]));
  for (const dir of ['asc', 'desc'] as Direction[]) {
    const expected = dir === 'asc' ? wanted : [...wanted].reverse();
    // Either condition may drive (event-query.ts picks the sparser one): the answer is the same.
    const deviceDrives = new ProbeCursor(new UnionCursor(['a', 'b'].map((d) => new KeyRangeCursor(dbs.index, [DEVICE, d], lo, hi, dir)), dir), [probeSchema], dir);
    const schemaDrives = new ProbeCursor(new KeyRangeCursor(dbs.index, [SCHEMA, 'x'], lo, hi, dir), [probeDevice], dir);
    t.same(walk(deviceDrives, dir), expected, `${dir}, device drives`);
    t.same(walk(schemaDrives, dir), expected, `${dir}, schema drives`);
  }
  const none = new ProbeCursor(new KeyRangeCursor(dbs.index, [DEVICE, 'a'], lo, hi, 'asc'), [() => false], 'asc');
  t.equal(none.seek(-Infinity), undefined, 'no candidate passes: undefined, after walking the driver');
  const every = new ProbeCursor(new KeyRangeCursor(dbs.events, [], lo, hi, 'asc'), [probeSchema, (ts) => !deviceA.includes(ts)], 'asc');
  t.same(walk(every, 'asc'), all.filter((v) => v >= lo && v <= hi && schemaX.has(v) && !deviceA.includes(v)), 'every probe must pass');
});
