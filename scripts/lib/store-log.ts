/** The store's own account of a harness run: its logged errors (pino level 50 and up), by message. */

/** One kind of logged error: how often, and the first full log line. */
interface LoggedError {
  count: number;
  first: string;
}

/** The errors in a store's JSON-lines output, keyed by the innermost error message. */
function loggedErrors(output: string): Map<string, LoggedError> {
  const errors = new Map<string, LoggedError>();
  for (const line of output.split('\n')) {
    let entry: { level?: number; msg?: string; err?: { message?: string; cause?: { message?: string } } };
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    if ((entry.level ?? 0) < 50) continue;
    const message = entry.err?.cause?.message ?? entry.err?.message ?? entry.msg ?? '?';
    const known = errors.get(message);
    if (known) known.count++;
    else errors.set(message, { count: 1, first: line });
  }
  return errors;
}

/** Prints `loggedErrors(output)`, one line per kind with the first occurrence's stack trimmed. */
export function printLoggedErrors(output: string): void {
  const errors = loggedErrors(output);
  console.log(`store errors logged: ${errors.size === 0 ? 'none' : ''}`);
  for (const [message, { count, first }] of errors) {
    console.log(`  ${count} x ${message.slice(0, 200)}`);
    console.log(`    first: ${first.slice(0, 1200)}`);
  }
}
