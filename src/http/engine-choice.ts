/**
 * Which HTTP engine serves (docs/OPERATIONS.md, "HTTP engines"): `HTTP_ENGINE=uws|node` forces one
 * (uws refuses to start when no native build loads); unset, the best native uWebSockets.js build
 * that loads here, else the `node:http` engine announced once, loudly, at start-up.
 */
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { packageVersion } from '../paths.js';
import type { EngineName, HttpEngine, RuntimeInfo } from './engine.js';
import type { LingeringClose } from './exchange.js';
import { createNodeEngine } from './node/node-engine.js';
import type { UwsHost } from './uws/uws-builds.js';
import { createUwsEngine } from './uws/uws-engine.js';
import { currentHost, loadUws, type UwsLoadReport } from './uws/uws-loader.js';

/**
 * What the fallback engine costs against the native one, quoted in its start-up log: figures of
 * native-bench's run of 2026-11-27 (bench.js runs both engines side by side; RESULTS.md,
 * "HTTP engines"). Ingest is bound by the durable append, so it loses less than bare HTTP.
 */
export const FALLBACK_COST = '85% of the native small-event ingest rate, as fast with images, 46% of its bare HTTP request rate; '
  + 'native-bench/RESULTS.md, "HTTP engines"';

/** Thrown when HTTP_ENGINE=uws and no native uWebSockets.js build loads. */
export class UwsUnavailable extends Error {
  constructor(report: UwsLoadReport) {
    super(`HTTP_ENGINE=uws but no native uWebSockets.js build loads here (${describeHost(report.host)}): ${uwsNeeds(report).join('; ')}`);
    this.name = 'UwsUnavailable';
  }
}

/** `Node v24.11.1 (ABI 137), linux-x64, glibc 2.36`. */
export function describeHost(host: UwsHost, nodeVersion = process.version): string {
  const libc = host.platform !== 'linux' ? '' : host.glibc ? `, glibc ${host.glibc}` : ', no glibc';
  return `Node ${nodeVersion} (ABI ${host.abi}), ${host.platform}-${host.arch}${libc}`;
}

/** Why each build does not serve here: passed over (with what it needs) or failed to load. */
export function uwsNeeds(report: UwsLoadReport): string[] {
  const name = (b: { packageName: string; pinnedVersion?: string }) => (b.pinnedVersion ? `${b.packageName}@${b.pinnedVersion}` : b.packageName);
  return [
    ...report.choice.passedOver.map(({ build, reason }) => `${name(build)}: ${reason}`),
    ...report.failures.map(({ build, error }) => `${name(build)}: did not load (${error})`),
  ];
}

/** The loud start-up line of the fallback engine: engine, Node ABI, glibc, what uWS needs, cost. */
export function fallbackNotice(report: UwsLoadReport, nodeVersion = process.version): string {
  return (
    `HTTP engine: node:http FALLBACK. No native uWebSockets.js loads on ${describeHost(report.host, nodeVersion)}. ` +
    `uWebSockets.js would need: ${uwsNeeds(report).join('; ')}. ` +
    `The store serves the same API, slower (${FALLBACK_COST}).`
  );
}

function runtimeInfo(name: EngineName, host: UwsHost, uwsBuild: string | null): RuntimeInfo {
  return { version: packageVersion, node_version: process.version, node_abi: process.versions.modules, http_engine: name, uws_build: uwsBuild, glibc: host.glibc };
}

/** What `createEngine` reads of the settings. */
export type EngineSettings = Pick<Config, 'httpEngine' | 'lingeringCloseMaxBytes' | 'lingeringCloseSeconds'>;

/**
 * Creates the engine `settings.httpEngine` asks for (HTTP_ENGINE), or the best one when
 * undefined, and logs which; its exchanges linger after early answers as LINGERING_CLOSE_MAX_BYTES
 * and LINGERING_CLOSE_SECONDS say (exchange.ts `LingeringClose`).
 * @throws UwsUnavailable when HTTP_ENGINE is `uws` and no native build loads
 */
export function createEngine(settings: EngineSettings, log: Logger): HttpEngine {
  const requested = settings.httpEngine;
  const lingering: LingeringClose = { maxBytes: settings.lingeringCloseMaxBytes, seconds: settings.lingeringCloseSeconds };
  if (requested === 'node') {
    const host = currentHost();
    log.info({ httpEngine: 'node', node: process.version, nodeAbi: host.abi }, 'HTTP engine: node:http (HTTP_ENGINE=node)');
    return createNodeEngine(runtimeInfo('node', host, null), lingering);
  }
  const report = loadUws();
  const { loaded } = report;
  if (loaded) {
    log.info({ httpEngine: 'uws', uwsBuild: loaded.label, node: process.version, nodeAbi: report.host.abi, glibc: report.host.glibc },
      `HTTP engine: uWebSockets.js ${loaded.label} (native)`);
    return createUwsEngine(loaded, runtimeInfo('uws', report.host, loaded.label), lingering);
  }
  if (requested === 'uws') throw new UwsUnavailable(report);
  log.warn({ httpEngine: 'node', node: process.version, nodeAbi: report.host.abi, glibc: report.host.glibc, uwsNeeds: uwsNeeds(report) }, fallbackNotice(report));
  return createNodeEngine(runtimeInfo('node', report.host, null), lingering);
}
