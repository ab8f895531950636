/**
 * The stream benchmark's subscribers, in a process of their own (neither the store's nor wrk's,
 * so the CPU they use shows apart from the store's): started by `startStreamClients`, it spreads
 * its subscribers over worker threads (lib/stream-subscribers.js) and speaks to stream.js over
 * IPC:
 *   parent -> child  { type: 'report' }    collect what every subscriber saw, then close them
 *   child -> parent  { type: 'ready' }     every subscriber is connected (and so subscribed)
 *                    { type: 'report', subscribers }   one Tally report per subscriber
 *                    { type: 'error', message }
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const SELF = fileURLToPath(import.meta.url);
const SUBSCRIBERS = fileURLToPath(new URL('./stream-subscribers.js', import.meta.url));

/**
 * @typedef {object} SubscriberSpec
 * @property {'sse' | 'ws'} kind
 * @property {string} group label the figures are grouped by (e.g. `sse-all`)
 * @property {string} path `/v2/events/stream` with its query
 * @property {boolean} seesProbes whether its filter lets the probe events through
 */

/**
 * The next message of `type` that `source` (a child process or a worker) sends, as a promise;
 * an `error` message rejects it, and so does `stop` (the child's `exit`, the worker's `error`),
 * with the error `stopped` makes of that event's argument.
 */
function nextMessage(source, type, stop, stopped) {
  return new Promise((resolve, reject) => {
    const onMessage = (message) => {
      if (message.type === type) done(() => resolve(message));
      else if (message.type === 'error') done(() => reject(new Error(`stream clients: ${message.message}`)));
    };
    const onStop = (arg) => done(() => reject(stopped(arg)));
    const done = (settle) => {
      source.off('message', onMessage);
      source.off(stop, onStop);
      settle();
    };
    source.on('message', onMessage);
    source.on(stop, onStop);
  });
}

/** The next message of `type` that the clients process sends; its exit first rejects. */
const fromChild = (child, type) => nextMessage(child, type, 'exit', (code) => new Error(`stream clients exited (code ${code}) before '${type}'`));

/** The next message of `type` that a worker sends; its error rejects. */
const fromWorker = (worker, type) => nextMessage(worker, type, 'error', (err) => err);

/**
 * Forks the clients process and connects `subscribers` to the store at `url` over `threads`
 * worker threads; resolves once every one is connected.
 * @param {{ url: string, subscribers: SubscriberSpec[], threads: number }} options
 * @returns {Promise<{ pid: number, report: () => Promise<object[]> }>} `report()` collects each
 *   subscriber's tally, closes them all and ends the process
 */
export async function startStreamClients({ url, subscribers, threads }) {
  const child = fork(SELF, ['--stream-clients'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.once('exit', () => process.off('exit', kill));
  const ready = fromChild(child, 'ready');
  child.send({ type: 'start', url, subscribers, threads });
  await ready;
  return {
    pid: child.pid,
    async report() {
      const reported = fromChild(child, 'report');
      child.send({ type: 'report' });
      const { subscribers: tallies } = await reported;
      await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve()));
      return tallies;
    },
  };
}

/** The clients process: workers with a share of the subscribers each, driven over IPC. */
function runClientsProcess() {
  let workers = [];
  process.on('message', async (message) => {
    try {
      if (message.type === 'start') {
        const { url, subscribers, threads } = message;
        const shares = Array.from({ length: threads }, (_, t) => subscribers.filter((_, i) => i % threads === t));
        workers = shares.filter((share) => share.length > 0)
          .map((share) => new Worker(SUBSCRIBERS, { workerData: { role: 'stream-subscribers', url, subscribers: share } }));
        await Promise.all(workers.map((worker) => fromWorker(worker, 'ready')));
        process.send({ type: 'ready' });
      } else if (message.type === 'report') {
        const reports = await Promise.all(workers.map((worker) => {
          const reported = fromWorker(worker, 'report');
          worker.postMessage({ type: 'report' });
          return reported;
        }));
        process.send({ type: 'report', subscribers: reports.flatMap((r) => r.subscribers) }, () => process.exit(0));
      }
    } catch (err) {
      process.send({ type: 'error', message: err.message }, () => process.exit(1));
    }
  });
}

if (process.argv.includes('--stream-clients') && process.argv[1] === SELF) runClientsProcess();
