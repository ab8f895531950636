/**
 * The sd_notify protocol (sd_notify(3), docs/OPERATIONS.md, "Supervision by systemd"): the store
 * tells systemd, which runs it with `Type=notify`, that it is ready (`READY=1`), what it is doing
 * (`STATUS=`), that it is stopping (`STOPPING=1`), and that its event loop still turns
 * (`WATCHDOG=1`). Each message is one datagram of `KEY=value` lines sent to the unix datagram socket
 * systemd names in NOTIFY_SOCKET; WATCHDOG_USEC (with WATCHDOG_PID, when set, naming this process)
 * gives the watchdog's timeout.
 *
 * Node's `dgram` speaks UDP only and `net` unix streams only, so the datagram goes through
 * node-unix-socket's DgramSocket (prebuilt N-API binaries, nothing compiled at install), loaded
 * only when NOTIFY_SOCKET is set. Where its binary does not load (the registry has none for
 * arm64), each message goes through systemd's own `systemd-notify` instead, a process per message
 * (systemd-notify(1)), which the unit's `NotifyAccess=all` lets systemd accept; without either the
 * store serves unsupervised, with an error logged. Abstract socket names (`@...`) are not
 * reachable through node-unix-socket; systemd's managers name a path (/run/systemd/notify,
 * $XDG_RUNTIME_DIR/systemd/notify).
 */
import { execFile, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import type { Logger } from '../logger.js';

const require = createRequire(import.meta.url);

/** What a datagram socket of node-unix-socket offers (its DgramSocket, js/dgram.d.ts). */
interface DatagramSocket {
  sendTo(buf: Buffer, offset: number, length: number, destPath: string, onWrite?: (err: Error | undefined) => void): void;
  close(): void;
}

/** A message: its variables, in order, e.g. `{ READY: 1, STATUS: 'serving' }`. */
export type NotifyState = Record<string, string | number>;

/** Sends sd_notify messages to the service manager. */
export interface SystemdNotifier {
  /** The socket the messages go to (NOTIFY_SOCKET). */
  readonly socketPath: string;
  /** Sends one message; a failed send is logged (once per error message), never thrown. */
  notify(state: NotifyState): void;
  /** Closes the socket; later messages are dropped. */
  close(): void;
}

/**
 * One datagram's text: `KEY=value` lines. A value's newlines become spaces (a newline ends the variable).
 * @throws Error for a key that is not upper-case letters, digits and `_`
 */
export function formatNotifyState(state: NotifyState): string {
  return Object.entries(state)
    .map(([key, value]) => {
      if (!/^[A-Z][A-Z0-9_]*$/.test(key)) throw new Error(`sd_notify variable names are upper case: ${key}`);
      return `${key}=${String(value).replace(/[\r\n]+/g, ' ')}\n`;
    })
    .join('');
}

/**
 * The notifier for this process, or undefined when no service manager waits for messages
 * (NOTIFY_SOCKET unset or empty), or when it cannot be reached (logged at error: an abstract
 * socket name; neither node-unix-socket's binary nor `systemd-notify` on PATH).
 * @param env the environment (NOTIFY_SOCKET)
 */
export function openSystemdNotifier(log: Logger, env: NodeJS.ProcessEnv = process.env): SystemdNotifier | undefined {
  const socketPath = env.NOTIFY_SOCKET;
  if (!socketPath) return undefined;
  if (!socketPath.startsWith('/')) {
    log.error({ notifySocket: socketPath }, 'NOTIFY_SOCKET is not a socket path (an abstract name?); systemd gets no READY=1 nor watchdog pings (docs/OPERATIONS.md, "Supervision by systemd")');
    return undefined;
  }
  let socket: DatagramSocket;
  try {
    const { DgramSocket } = require('node-unix-socket') as { DgramSocket: new () => DatagramSocket };
    socket = new DgramSocket();
  } catch (err) {
    if (spawnSync(NOTIFY_COMMAND, ['--version'], { stdio: 'ignore' }).status === 0) {
      log.warn({ err }, `node-unix-socket does not load here; sd_notify messages go through ${NOTIFY_COMMAND}, which needs NotifyAccess=all (docs/OPERATIONS.md, "Supervision by systemd")`);
      return commandNotifier(log, socketPath);
    }
    log.error({ err }, `node-unix-socket does not load here, and ${NOTIFY_COMMAND} is not on PATH; systemd gets no READY=1 nor watchdog pings (docs/OPERATIONS.md, "Supervision by systemd")`);
    return undefined;
  }
  let closed = false;
  const failed = sendFailureReporter(log, socketPath);
  return {
    socketPath,
    notify(state) {
      if (closed) return;
      const bytes = Buffer.from(formatNotifyState(state));
      socket.sendTo(bytes, 0, bytes.length, socketPath, failed);
    },
    close() {
      if (closed) return;
      closed = true;
      socket.close();
    },
  };
}

/** A send's callback that logs a failed send at warn, once per error message. */
function sendFailureReporter(log: Logger, socketPath: string): (err: Error | undefined) => void {
  const reported = new Set<string>();
  return (err) => {
    if (!err || reported.has(err.message)) return;
    reported.add(err.message);
    log.warn({ err, notifySocket: socketPath }, 'sd_notify message not sent');
  };
}

/** systemd's own sender of sd_notify messages (systemd-notify(1)), part of every systemd install. */
const NOTIFY_COMMAND = 'systemd-notify';

/**
 * A notifier that sends each message by running `systemd-notify KEY=value...`, one after
 * another, so that they arrive in order. systemd-notify waits until the manager has taken the
 * message (its `BARRIER=1`), and the manager accepts it from another process of the unit only
 * under `NotifyAccess=all`.
 */
function commandNotifier(log: Logger, socketPath: string): SystemdNotifier {
  let closed = false;
  let sent: Promise<void> = Promise.resolve();
  const failed = sendFailureReporter(log, socketPath);
  const send = (variables: string[]) => new Promise<void>((resolve) => {
    execFile(NOTIFY_COMMAND, variables, (err) => {
      failed(err ?? undefined);
      resolve();
    });
  });
  return {
    socketPath,
    notify(state) {
      if (closed) return;
      const variables = formatNotifyState(state).split('\n').filter(Boolean);
      sent = sent.then(() => send(variables));
    },
    close() {
      closed = true;
    },
  };
}

/**
 * How often to send `WATCHDOG=1` (ms): half the watchdog timeout, as sd_watchdog_enabled(3)
 * advises; undefined when the watchdog is off for this process (WATCHDOG_USEC unset, not a
 * positive integer, or WATCHDOG_PID naming another process).
 * @param env the environment (WATCHDOG_USEC in µs, WATCHDOG_PID)
 */
export function watchdogIntervalMs(env: NodeJS.ProcessEnv = process.env, pid = process.pid): number | undefined {
  const usec = Number(env.WATCHDOG_USEC);
  if (!env.WATCHDOG_USEC || !Number.isSafeInteger(usec) || usec <= 0) return undefined;
  if (env.WATCHDOG_PID && Number(env.WATCHDOG_PID) !== pid) return undefined;
  return Math.max(1, Math.floor(usec / 2000));
}
