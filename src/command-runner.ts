/**
 * How each `edge-events` subcommand runs (docs/SEARCH.md, "The hosted API", for the exit codes):
 * registered on the binary's program, its action setting `process.exitCode`; or run in-process
 * on its own program, for tests and embedding, answering the exit code.
 */
import { Command, CommanderError } from 'commander';

/**
 * A CLI's exit code, the same for every `edge-events` subcommand (docs/SEARCH.md, "The hosted API"):
 * 0 success; 1 bad input, no answer, any other failure; 2 missing or invalid key; 3 not found.
 */
export type ExitCode = 0 | 1 | 2 | 3;

/** What a CLI tells the user when a command fails: the message, a hint that fits its cause, the exit code. */
export interface Failure {
  exitCode: ExitCode;
  message: string;
  hint: string;
}

/** Adds one subcommand to `program`, its output going to `io`, its outcome to `setExitCode`. */
export type AddCommand<Io> = (program: Command, io: Io, setExitCode: (code: ExitCode) => void) => void;

/** Adds a subcommand to the binary's program, writing to the process's own streams. */
export function registerCommand<Io>(program: Command, add: AddCommand<Io>, io: Io): void {
  add(program, io, (code) => {
    process.exitCode = code;
  });
}

/**
 * Runs subcommand `name` in-process with `argv` (the arguments after its name).
 * @returns its exit code; 1 for a usage error commander reports, 0 for `--help`
 */
export async function runCommand<Io>(name: string, add: AddCommand<Io>, argv: string[], io: Io): Promise<ExitCode> {
  const program = new Command('edge-events').exitOverride();
  let exitCode: ExitCode = 0;
  add(program, io, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync([name, ...argv], { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    return error.exitCode === 0 ? 0 : 1;
  }
  return exitCode;
}
