/** The process logger: pino, JSON lines on stdout (journald keeps them under systemd). */
import { pino, type Logger } from 'pino';
import { REDACTED, secretsRegex } from './redact.js';

export type { Logger };

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
 */
export function createLogger(level: string, secrets: readonly (string | undefined)[] = []): Logger {
  const masking = secretsRegex(secrets.filter((secret) => secret !== undefined && secret.length >= MIN_MASKED_KEY_LENGTH));
  const options = { level, base: { service: 'edge-events' }, serializers: ERROR_SERIALIZERS };
  if (!masking) return pino(options);
  const { regex } = masking;
  return pino({
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
