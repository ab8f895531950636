/**
 * The systems the bench compares (peers/README.md): how each starts, how it is filled with
 * 1,000,000 events for the filtered-list workload, and where its copy of the 100 MB video is
 * downloaded from.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { storeCommand } from './store-process.js';

const benchDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const peersDir = path.join(benchDir, 'peers');
/** Debian's interpreter, which has python3-fastapi and python3-uvicorn (setup.sh installs them). */
const DEBIAN_PYTHON = '/usr/bin/python3';
const PEER_VIDEO = 'video-100mb.mp4';

/**
 * @typedef {object} BenchSystem
 * @property {string} name short name used in tables
 * @property {string} stack what it is built from
 * @property {import('./store-process.js').ServerCommand} server
 * @property {'uws' | 'node'} [engine] edge-event-store's HTTP engine (docs/OPERATIONS.md, "HTTP engines"),
 *   or the durable floor's; unset for the peers
 * @property {boolean} [floor] true for the durable floor (durableFloorSystem): the systems' figures are
 *   divided by its own
 * @property {'http' | 'bulk' | 'none'} preload how the 1M-event store is filled: through POST /v2/events
 *   (edge-event-store, whose write path is the thing measured) or by peers/bulk-load.js; none for
 *   the durable floor, which serves no list
 * @property {(running: import('./store-process.js').ServerProcess, videoFile: string) => Promise<string>} placeVideo
 *   puts the video into the running system; returns the path that downloads it
 */

/**
 * edge-event-store on `engine`: the same store, its video placed through its own upload route.
 * @param {string} [root] another checkout whose build runs instead of this repository's (`comparedBuild`)
 */
function edgeEventStore(engine, name, http, root) {
  return {
    name,
    engine,
    stack: `${http} + LMDB + blob segments (${root ? `the build in ${root}` : 'this repository, dist/'}, HTTP_ENGINE=${engine})`,
    server: storeCommand(engine, root),
    preload: 'http',
    async placeVideo(running, videoFile) {
      const { createDraft, upload } = await import('../uploads.js');
      const draft = await createDraft(running);
      // upload() sends exactly the bytes writeVideoFile() wrote (uploads.js).
      const attached = await upload(running, draft, fs.statSync(videoFile).size, { chunked: false });
      return `/videos/${attached.file_id}`;
    },
  };
}

/**
 * @type {BenchSystem[]} edge-event-store first (on its native engine): ratios are against the
 * others; its node:http engine runs beside it, compared with it in "HTTP engines", not with the peers.
 */
export const SYSTEMS = [
  edgeEventStore('uws', 'edge-event-store', 'uWebSockets.js'),
  edgeEventStore('node', 'edge-event-store-node', 'node:http'),
  {
    name: 'fastify-sqlite',
    stack: 'Fastify 5 + better-sqlite3 (WAL, synchronous=FULL) + one file per image',
    server: { command: process.execPath, args: [path.join(peersDir, 'fastify-sqlite', 'server.js')], cwd: peersDir },
    preload: 'bulk',
    placeVideo: copyIntoImages,
  },
  {
    name: 'fastapi-sqlite',
    stack: 'FastAPI + uvicorn (2 workers, uvloop, httptools) + sqlite3, from Debian',
    server: {
      command: DEBIAN_PYTHON,
      args: (port) => ['-m', 'uvicorn', 'app:app', '--host', '127.0.0.1', '--port', String(port), '--workers', '2',
        '--loop', 'uvloop', '--http', 'httptools', '--log-level', 'warning', '--no-access-log'],
      cwd: path.join(peersDir, 'fastapi-sqlite'),
    },
    preload: 'bulk',
    placeVideo: copyIntoImages,
  },
];

/** A peer serves DATA_DIR/images/<id> as /images/<id>: the video is copied there. */
async function copyIntoImages(running, videoFile) {
  fs.copyFileSync(videoFile, path.join(running.dataDir, 'images', PEER_VIDEO));
  return `/images/${PEER_VIDEO}`;
}

/**
 * Another checkout's build of the store on `engine` (sweep.js `--compare=DIR`), measured by turns
 * with this one: its name is `edge-event-store@` and the folder's name (a commit, say).
 * @param {string} root a checkout with its `dist/` built
 * @param {'uws' | 'node'} engine
 * @returns {BenchSystem}
 */
export function comparedBuild(root, engine) {
  if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli.js'))) throw new Error(`--compare=${root}: no dist/src/cli.js there (npm run build in it first)`);
  return edgeEventStore(engine, `edge-event-store@${path.basename(root)}`, engine === 'uws' ? 'uWebSockets.js' : 'node:http', root);
}

/** The name the durable floor goes by in the sweep's tables and its `--systems`. */
export const DURABLE_FLOOR = 'durable-floor';

/**
 * The durable floor (ceilings/durable-floor.js, the store's src/bench/durable-floor.ts) on `engine`,
 * as a system of the sweep: started, loaded and measured as the others, every figure of theirs
 * divided by its own. It serves creates and their count only, so bench.js runs it as a ceiling
 * (lib/ceilings.js `durableFloorCeiling`) instead.
 * @param {'uws' | 'node'} engine the store's first engine in the run, so the floor's HTTP is the store's
 * @returns {BenchSystem}
 */
export function durableFloorSystem(engine) {
  return {
    name: DURABLE_FLOOR,
    engine,
    floor: true,
    stack: `the body JSON.parsed, appended to a pre-zeroed file and fdatasync'd before the 201, nothing else (ceilings/durable-floor.js, the store's src/bench/durable-floor.ts, HTTP_ENGINE=${engine})`,
    server: { ...storeCommand(engine), args: [path.join(benchDir, 'ceilings', 'durable-floor.js')], cwd: benchDir },
    preload: 'none',
    placeVideo: () => Promise.reject(new Error('the durable floor keeps no files')),
  };
}
