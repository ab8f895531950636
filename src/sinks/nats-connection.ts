/**
 * Connections to NATS for the JetStream sink and for hub mode (docs/OPERATIONS.md, "NATS
 * JetStream", "Hub mode"): a list of servers, NATS_CREDS when set, and reconnection for ever
 * (nats.js `maxReconnectAttempts: -1`; `waitOnFirstConnect`: a server that is not up yet is
 * waited for, not an error).
 */
import fs from 'node:fs';
import { setSha256Backend } from '@nats-io/obj';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';

// Object store digests with node:crypto rather than the pure-JS default, which took 39% of the
// sink's thread (native-bench/PROFILE.md, "NATS JetStream"): "Apps running on Node [...] can flip
// to native for substantially higher throughput" (@nats-io/obj, setSha256Backend).
setSha256Backend('native');

/**
 * Connects to `servers`; resolves once connected (however long the first server takes to appear).
 * @param name the connection's name, as servers list it
 * @param creds a credentials file (JWT and NKey seed), or undefined
 * @throws the fs error of an unreadable credentials file; an auth error the servers answer
 */
export function connectNats(servers: string[], creds: string | undefined, name: string): Promise<NatsConnection> {
  return connect({
    servers,
    name,
    maxReconnectAttempts: -1,
    waitOnFirstConnect: true,
    reconnectTimeWait: 1000,
    // No error built, with its stack, at every request in case it fails: 10% of the hub's thread
    // (native-bench/PROFILE.md, "The hub's import"); a failed request's error still says what failed
    // (nats.js ConnectionOptions `noAsyncTraces`).
    noAsyncTraces: true,
    ...(creds ? { authenticator: credsAuthenticator(fs.readFileSync(creds)) } : {}),
  });
}
