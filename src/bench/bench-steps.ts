/**
 * The bench's measured steps (docs/OPERATIONS.md, "Measuring the box: edge-events bench"): for each
 * workload (small events, image events) and each number of requests in flight, the store and the
 * durable floor by turns, each already running on its own data folder. A step is a warm-up, a
 * window of closed-loop load (closed-loop.ts), then a tail without load in which the server's
 * background work for the window's events (the store's index checkpoint, a quarter of a second
 * after 2,000 creates wait, and LMDB's flush after it; docs/STORAGE.md) is still counted. CPU and bytes written are the
 * server process's own, from the window's start to the tail's end, per event answered in the window.
 */
import { setTimeout as pause } from 'node:timers/promises';
import { closedLoopAgent, runClosedLoop } from './closed-loop.js';
import { machineBusySeconds } from './process-meter.js';
import type { ServerChild } from './server-child.js';

/** The two systems the bench runs. */
export type SystemName = 'store' | 'floor';
/** The two workloads: small events (~850 B of JSON), and the same carrying one image. */
export type WorkloadName = 'small' | 'image';

/** How long each part of a step lasts. */
export interface StepPlan {
  /** The measured window, s. */
  seconds: number;
  /** Load before the window, not measured, s. */
  warmupSeconds: number;
  /** After the window, no load, still counted, s. */
  tailSeconds: number;
  /** Requests in flight, one step each, e.g. [1, 4, 16]. */
  inFlight: number[];
}

/** One system at one number of requests in flight on one workload. */
export interface StepFigures {
  system: SystemName;
  workload: WorkloadName;
  inFlight: number;
  /** Events answered 201 in the window. */
  events: number;
  /** The window's length, s. */
  seconds: number;
  /** events / seconds. */
  eventsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** utime + stime of the server over the window and the tail, per event, µs. */
  cpuMicrosPerEvent: number;
  /** write_bytes of the server over the window and the tail, per event, bytes. */
  bytesWrittenPerEvent: number;
  /** The machine's busy CPU over the window and the tail, less the server's and the client's, in cores: other work. */
  otherCores: number;
}

/** What the store held at a moment: its events and the bytes they take (/stats `current`). */
export interface Holding {
  events: number;
  /** Live blob bytes and LMDB pages in use (`total_storage_bytes`). */
  bytes: number;
}

/** What the steps found: each step's figures, and what the store held before the steps and after each workload's. */
export interface StepsRun {
  steps: StepFigures[];
  /** Before the first step, after the small events' steps, after the image events'. */
  holdings: { before: Holding } & Record<WorkloadName, Holding>;
}

/**
 * What `store` holds now, by its /stats, once a manual cleanup checkpointed its head into the index
 * (docs/ARCHITECTURE.md, "The path of a cleanup": a manual run always does): the creates a
 * checkpoint has not committed yet take no index pages.
 * @throws Error naming the answer when the cleanup or /stats does not answer 200
 */
export async function storeHolding(store: ServerChild): Promise<Holding> {
  const cleanup = await fetch(`${store.url}/admin/cleanup`, { method: 'POST' });
  if (!cleanup.ok) throw new Error(`the store's POST /admin/cleanup answered ${cleanup.status}`);
  const answer = await fetch(`${store.url}/stats`);
  if (!answer.ok) throw new Error(`the store's /stats answered ${answer.status}`);
  const { current } = (await answer.json()) as { current: { total_events: number; total_storage_bytes: number } };
  return { events: current.total_events, bytes: current.total_storage_bytes };
}

/** Where the steps are in the plan, for a progress bar: the step starting, the plan's seconds before it, its own. */
export type StepProgress = (label: string, plannedSecondsDone: number, spanSeconds: number) => void;

/** Planned seconds of one step. */
export const stepSeconds = (plan: StepPlan): number => plan.warmupSeconds + plan.seconds + plan.tailSeconds;

/**
 * Runs one step against `server`.
 * @throws Error on the first answer other than 201 (closed-loop.ts `post`), or when the window
 *   got no answer at all
 */
export async function measureStep(server: ServerChild, bodies: Buffer[], inFlight: number, plan: StepPlan): Promise<Omit<StepFigures, 'system' | 'workload'>> {
  const agent = closedLoopAgent(inFlight);
  const load = { url: `${server.url}/v2/events`, bodies, inFlight, agent };
  try {
    if (plan.warmupSeconds > 0) await runClosedLoop({ ...load, seconds: plan.warmupSeconds });
    const before = server.counters();
    const busy0 = machineBusySeconds();
    const started = performance.now();
    const run = await runClosedLoop({ ...load, seconds: plan.seconds });
    // The tail is a measured interval of its own, not a wait for something to happen.
    await pause(plan.tailSeconds * 1000);
    const after = server.counters();
    const elapsed = (performance.now() - started) / 1000;
    if (run.requests === 0) throw new Error(`no event was answered in ${plan.seconds} s at ${inFlight} in flight`);
    const serverCpu = after.cpuSeconds - before.cpuSeconds;
    return {
      inFlight,
      events: run.requests,
      seconds: run.seconds,
      eventsPerSecond: run.rate,
      p50Ms: run.p50Ms,
      p99Ms: run.p99Ms,
      cpuMicrosPerEvent: (1e6 * serverCpu) / run.requests,
      bytesWrittenPerEvent: (after.writeBytes - before.writeBytes) / run.requests,
      otherCores: Math.max(0, machineBusySeconds() - busy0 - serverCpu - run.clientCpuSeconds) / elapsed,
    };
  } finally {
    agent.destroy();
  }
}

/**
 * Every step: for each workload, each number in flight, the store then the floor; what the store
 * holds is read before the steps and after each workload's, outside every step's window.
 * @param bodies each workload's create bodies, posted in turn
 * @param progress called before each step with its label and after each with the plan's seconds done
 * @throws what measureStep throws, the step named
 */
export async function runSteps(servers: Record<SystemName, ServerChild>, bodies: Record<WorkloadName, Buffer[]>, plan: StepPlan, progress: StepProgress): Promise<StepsRun> {
  const steps: StepFigures[] = [];
  const before = await storeHolding(servers.store);
  const after: Partial<Record<WorkloadName, Holding>> = {};
  for (const workload of ['small', 'image'] as const) {
    for (const inFlight of plan.inFlight) {
      for (const system of ['store', 'floor'] as const) {
        const label = `${system === 'store' ? 'store' : 'durable floor'}, ${workload} events, ${inFlight} in flight`;
        progress(label, steps.length * stepSeconds(plan), stepSeconds(plan));
        try {
          steps.push({ system, workload, ...(await measureStep(servers[system], bodies[workload], inFlight, plan)) });
        } catch (err) {
          throw new Error(`${label}: ${(err as Error).message}`, { cause: err });
        }
      }
    }
    after[workload] = await storeHolding(servers.store);
  }
  progress('stopping', steps.length * stepSeconds(plan), 0);
  return { steps, holdings: { before, small: after.small!, image: after.image! } };
}
