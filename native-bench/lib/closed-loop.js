/**
 * The closed-loop HTTP client (sweep.js, draft-finalize.js): exactly `inFlight` requests
 * outstanding at any time, as `inFlight` devices each posting an event and waiting for its 201
 * before posting the next; `runPaced` is one such device at a pipeline's pace. One definition,
 * shipped with the store for `edge-events bench` (src/bench/closed-loop.ts), loaded from the
 * build (../dist) as the ceilings load the store's code.
 *
 * @typedef {import('../../dist/src/bench/closed-loop.js').ClosedLoopRun} ClosedLoopRun
 */
export { closedLoopAgent, post, quantile, runClosedLoop, runPaced } from '../../dist/src/bench/closed-loop.js';
