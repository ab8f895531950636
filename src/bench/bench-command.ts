/**
 * `edge-events bench [--cameras N] [--fps N] [--image-ratio SHARE] [--tbw TB] [--cpu-for-store SHARE]
 * [--seconds-per-step S] [--image FILE] [--keep-free-mib MiB] [--details] [--json]`
 * (docs/OPERATIONS.md, "Measuring the box: edge-events bench"): the installed store on the box's
 * own disk, with the durable floor beside it, then what the operator's cameras would cost, in a
 * plain summary: how many cameras the store takes with the CPU left for inference and with all
 * of it, the share of a core, how long the store keeps the events, bytes written a day (a fresh
 * store's, said so), the days to the disk's rated TBW. `--details` adds the measured steps.
 *
 * Output contract, as the other subcommands': in JSON mode stdout gets one object (bench-report.ts
 * `BenchResult`); a failure leaves stdout empty and writes `{"error": {"message", "hint"}}` to
 * stderr (in words without --json). Exit codes (src/command-runner.ts): 0 measured; 1 a bad option
 * (commander names it), a bad setting, or a failed run; 130 and 143 after Ctrl-C and SIGTERM.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { registerCommand, runCommand, type ExitCode } from '../command-runner.js';
import { ConfigError } from '../config.js';
import type { ProgressStream } from './bench-progress.js';

/** Where the command reads its environment and writes its output. */
export interface BenchCliIo {
  stdout: { write(text: string): unknown };
  stderr: ProgressStream;
  env: Record<string, string | undefined>;
}

interface BenchFlags {
  cameras: number;
  fps: number;
  imageRatio: number;
  tbw?: number;
  secondsPerStep: number;
  image?: string;
  keepFreeMib: number;
  cpuForStore: number;
  details?: boolean;
  json?: boolean;
}

/** The default measured window of a step, s: 12 steps of about 5 s with warm-up and tail, about a minute. */
const DEFAULT_SECONDS_PER_STEP = 3;

/** A commander parser of a number within [min, max] (whole when `integer`), its error saying what it expects. */
function numberIn(min: number, max: number, expected: string, integer = false, above = false): (raw: string) => number {
  return (raw) => {
    const value = Number(raw);
    const fits = raw.trim() !== '' && Number.isFinite(value) && (!integer || Number.isInteger(value)) && (above ? value > min : value >= min) && value <= max;
    if (!fits) throw new InvalidArgumentError(`expected ${expected}.`);
    return value;
  };
}

/** Adds `bench` to `program`; its action sets `process.exitCode`. */
export function registerBenchCommand(program: Command): void {
  registerCommand(program, addBenchCommand, { stdout: process.stdout, stderr: process.stderr, env: process.env });
}

/**
 * Runs `edge-events bench` in-process, for tests and embedding.
 * @param argv the arguments after `bench`, e.g. `['--seconds-per-step', '0.5', '--json']`
 * @returns the exit code: 0 measured, 1 a bad option or a failed run
 */
export function runBenchCli(argv: string[], io: BenchCliIo): Promise<ExitCode> {
  return runCommand('bench', addBenchCommand, argv, io);
}

function addBenchCommand(program: Command, io: BenchCliIo, setExitCode: (code: ExitCode) => void): void {
  program
    .command('bench')
    .description('Measure this box: the store on the disk of DATA_DIR beside the durable floor, for about a minute, then what your cameras cost (docs/OPERATIONS.md, "Measuring the box: edge-events bench").')
    .option('--cameras <n>', 'cameras posting events', numberIn(1, 100_000, 'a whole number of cameras from 1', true), 1)
    .option('--fps <n>', 'events a second per camera', numberIn(0, 10_000, 'events a second above 0', false, true), 10)
    .option('--image-ratio <share>', 'share of the events that carry an image, 0 to 1', numberIn(0, 1, 'a share from 0 to 1'), 0.2)
    .option('--tbw <TB>', 'the disk\'s rated endurance in terabytes written, from its datasheet', numberIn(0, 1e9, 'terabytes above 0', false, true))
    .option('--seconds-per-step <s>', 'measured seconds of each of the 12 steps', numberIn(0.1, 600, 'seconds from 0.1 to 600'), DEFAULT_SECONDS_PER_STEP)
    .option('--image <file>', 'a JPEG or PNG from your cameras for the image events (default: a 640x480 JPEG made for the bench)')
    .option('--keep-free-mib <MiB>', 'MiB the run leaves free on the file system of DATA_DIR', numberIn(0, 1e12, 'MiB from 0'), 512)
    .option('--cpu-for-store <share>', 'share of the cores the store may use for the headline cameras, the rest left for inference', numberIn(0, 1, 'a share above 0, up to 1', false, true), 0.5)
    .option('--details', 'after the summary, each measured step beside the durable floor (the least a durable store must do)')
    .option('--json', 'machine-readable output: one object on stdout, {error:{message,hint}} on stderr')
    .action(async (flags: BenchFlags) => {
      setExitCode(await executeBench(flags, io));
    });
}

/** The hint for a failure, by its cause. */
function hintFor(error: unknown): string {
  if (error instanceof ConfigError) return 'The bench takes the store\'s settings from the environment: run it with the environment the store runs with (e.g. its env file).';
  if ((error as Error).message.includes('cannot make the bench\'s folder')) return 'Run it as the store\'s user, or as root.';
  if ((error as Error).message.includes('--keep-free-mib')) return 'Free some space on the file system of DATA_DIR, or give --keep-free-mib less (it protects the store that serves there).';
  if ((error as Error).message.startsWith('--image ')) return 'Give --image a JPEG or PNG file from your cameras, or leave it out for the image the bench makes.';
  return 'The bench\'s servers were stopped and its folder removed. See edge-events bench --help.';
}

async function executeBench(flags: BenchFlags, io: BenchCliIo): Promise<ExitCode> {
  const json = flags.json === true;
  try {
    // The run's modules (sharp, cli-progress) load for this command only, as the store's for `serve` (src/cli.ts).
    const [{ runBench }, { renderBench }] = await Promise.all([import('./bench-run.js'), import('./bench-report.js')]);
    // Without a bar (no TTY), one line says what is under way, unless the output is JSON.
    const say = json || io.stderr.isTTY ? undefined : (line: string) => io.stderr.write(`${line}\n`);
    const result = await runBench({
      cameras: flags.cameras, fps: flags.fps, imageRatio: flags.imageRatio, tbw: flags.tbw, cpuForStore: flags.cpuForStore,
      secondsPerStep: flags.secondsPerStep, image: flags.image, keepFreeBytes: flags.keepFreeMib * 1024 * 1024,
    }, { ...io, say });
    io.stdout.write(json ? `${JSON.stringify(result)}\n` : renderBench(result, { details: flags.details === true }));
    return 0;
  } catch (error) {
    const message = (error as Error).message;
    const hint = hintFor(error);
    io.stderr.write(json ? `${JSON.stringify({ error: { message, hint } })}\n` : `error: ${message}\nhint: ${hint}\n`);
    return 1;
  }
}
