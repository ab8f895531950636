/**
 * The process logger: pino on stdout, JSON lines (journald keeps them under systemd), or lines
 * for a person on a terminal (LOG_FORMAT; docs/OPERATIONS.md, "Logs").
 */
import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';
import { REDACTED, secretsRegex } from './redact.js';

export type { Logger };

/** How log lines are written: `json`, one JSON object a line; `pretty`, for a person to read. */
export type LogFormat = 'json' | 'pretty';

/**
 * pino-pretty's stream on stdout, written synchronously as pino's own is: the time of day, the
 * level, the message, then the line's fields, one a line; the fields every line carries (pid,
 * hostname, service) left out. Loaded only here: JSON logging loads none of it.
 */
function prettyStream(): DestinationStream {
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return pretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' });
}

/**
 * Shortest key masked in log lines (characters). Nothing the store logs carries a key by
 * construction; masking is a second line of defence, and masking a shorter "key" (a test's `k`)
 * would cut its letters out of every word of every line.
 */
export const MIN_MASKED_KEY_LENGTH = 8;

/**
 * `err` is written with its cause chain, each cause an object of its own with its type, message,
 * stack and fields (an fs error's `code`, `errno`, `syscall`, `path`): pino's default error
 * serializer folds the causes' messages and stacks into the error's own and drops their fields
 * (pino-std-serializers README, "exports.errWithCause(error)").
 */
const ERROR_SERIALIZERS = { err: pino.stdSerializers.errWithCause };

/**
 * Creates the logger at `level` (fatal, error, warn, info, debug, trace, silent).
 * @param secrets keys that must never reach the log (the hosted search and cloud keys): every
 *   form of each one of MIN_MASKED_KEY_LENGTH characters or more (raw, percent-, JSON-, HTML-,
 *   base64-encoded; see redact.ts) is replaced by `***` in each line as written, whatever
 *   field or error carried it. A line that would no longer be JSON once masked is replaced by a
 *   line saying so.
 * @param format `json` (default) or `pretty` (config.ts LOG_FORMAT); masking comes first either way
 */
export function createLogger(level: string, secrets: readonly (string | undefined)[] = [], format: LogFormat = 'json'): Logger {
  const masking = secretsRegex(secrets.filter((secret) => secret !== undefined && secret.length >= MIN_MASKED_KEY_LENGTH));
  const options = { level, base: { service: 'edge-events' }, serializers: ERROR_SERIALIZERS };
  // JSON goes to pino's own destination on stdout, as always; pretty lines through pino-pretty.
  const open = (opts: pino.LoggerOptions) => (format === 'pretty' ? pino(opts, prettyStream()) : pino(opts));
  if (!masking) return open(options);
  const { regex } = masking;
  return open({
    ...options,
    hooks: {
      // pino's hook on the serialized line, just before it is written (pino docs, "hooks.streamWrite").
      streamWrite(line: string): string {
        const masked = line.replace(regex, REDACTED);
        if (masked === line) return line;
        try {
          JSON.parse(masked);
          return masked;
        } catch {
          return `${JSON.stringify({ level: 40, time: Date.now(), service: 'edge-events', msg: 'a log line was withheld: it held a key that could not be masked in place' })}\n`;
        }
      },
    },
  });
}
