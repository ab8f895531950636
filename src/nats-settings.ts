/**
 * The NATS settings (docs/OPERATIONS.md, "NATS JetStream", "Hub mode"): the JetStream sink's and
 * the hub's servers, stream, bucket and subject names and limits, read and validated for
 * loadConfig (src/config.ts). A bad value throws ConfigError naming the setting.
 */
import { type Env, list, number, text } from './setting-readers.js';
import { ConfigError, type SettingName } from './settings.js';

/** Comma-separated `nats://` or `tls://` URLs; [] when unset. */
function natsServers(env: Env, name: SettingName): string[] {
  const servers = list(env, name);
  for (const server of servers) {
    let scheme: string | undefined;
    try {
      scheme = new URL(server).protocol;
    } catch {
      scheme = undefined;
    }
    if (scheme !== 'nats:' && scheme !== 'tls:') throw new ConfigError(name, 'comma-separated nats:// or tls:// URLs', server);
  }
  return servers;
}

/** A JetStream stream or bucket name: letters, digits, `-` and `_` (NATS docs, "Naming"). */
function natsName(env: Env, name: SettingName, fallback: string): string {
  const raw = text(env, name) ?? fallback;
  if (!/^[A-Za-z0-9_-]+$/.test(raw)) throw new ConfigError(name, 'letters, digits, - and _', raw);
  return raw;
}

/** A NATS subject prefix: tokens separated by `.`, none empty, no wildcard or whitespace. */
function subjectPrefix(env: Env, name: SettingName, fallback: string): string {
  const raw = text(env, name) ?? fallback;
  if (raw.split('.').some((token) => token === '' || /[*>\s]/.test(token))) {
    throw new ConfigError(name, 'tokens separated by ., none empty, without *, > or spaces', raw);
  }
  return raw;
}

/** A NATS filter subject: tokens separated by `.`, none empty; `*` a whole token, `>` only the last. */
function filterSubject(env: Env, name: SettingName, fallback: string): string {
  const raw = text(env, name) ?? fallback;
  const tokens = raw.split('.');
  const bad = tokens.some((token, i) => token === '' || /\s/.test(token) || (/[*>]/.test(token) && token.length > 1) || (token === '>' && i < tokens.length - 1));
  if (bad) throw new ConfigError(name, 'a NATS filter subject such as edge.events.> or edge.events.*.person', raw);
  return raw;
}

/**
 * The NATS settings of `Config` (src/config.ts) but NATS_CREDS: the JetStream sink's (NATS_URL;
 * empty: off) and hub mode's (NATS_SOURCE_URL; empty: off).
 * @throws ConfigError naming the first setting with a bad value
 */
export function natsSettings(env: Env) {
  return {
    natsServers: natsServers(env, 'NATS_URL'),
    natsStream: natsName(env, 'NATS_STREAM', 'EDGE_EVENTS'),
    natsSubjectPrefix: subjectPrefix(env, 'NATS_SUBJECT_PREFIX', 'edge.events'),
    natsObjectBucket: natsName(env, 'NATS_OBJECT_BUCKET', 'edge-events-files'),
    natsReplicas: number(env, 'NATS_REPLICAS', 1, { min: 1, max: 5 }),
    natsMaxAgeSeconds: number(env, 'NATS_MAX_AGE_SECONDS', 0),
    natsMaxBytes: number(env, 'NATS_MAX_BYTES', 0),
    natsSourceServers: natsServers(env, 'NATS_SOURCE_URL'),
    natsSourceStream: natsName(env, 'NATS_SOURCE_STREAM', 'EDGE_EVENTS'),
    natsSourceSubjects: filterSubject(env, 'NATS_SOURCE_SUBJECTS', 'edge.events.>'),
    natsSourceDurable: natsName(env, 'NATS_SOURCE_DURABLE', 'edge-events-hub'),
    natsSourceBucket: natsName(env, 'NATS_SOURCE_BUCKET', 'edge-events-files'),
    natsSourceLagWarnSeconds: number(env, 'NATS_SOURCE_LAG_WARN_SECONDS', 300, { min: 4 }),
  };
}
