/** The process logger: pino, JSON lines on stdout (journald keeps them under systemd). */
import { pino, type Logger } from 'pino';

export type { Logger };

/** Creates the logger at `level` (fatal, error, warn, info, debug, trace, silent). */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'edge-events' } });
}
