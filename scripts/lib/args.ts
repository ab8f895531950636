/** Command-line options of the harness scripts, given as `--name value` or `--name=value`. */

/**
 * Reads the numeric option `--name`.
 * @returns its value, or undefined when the option is absent
 * @throws Error naming the option when its value is not a positive number
 */
export function optionalNumberOption(name: string, argv: string[] = process.argv.slice(2)): number | undefined {
  const raw = textOption(name, argv);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} expects a positive number, got ${JSON.stringify(raw)}`);
  return value;
}

/**
 * Reads the numeric option `--name`, or `fallback` when it is absent.
 * @throws Error naming the option when its value is not a positive number
 */
export function numberOption(name: string, fallback: number, argv: string[] = process.argv.slice(2)): number {
  return optionalNumberOption(name, argv) ?? fallback;
}

/**
 * Reads the option `--name` as text (the last one given; empty when `--name` ends the line).
 * @returns its value, or undefined when the option is absent
 */
export function textOption(name: string, argv: string[] = process.argv.slice(2)): string | undefined {
  let raw: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === `--${name}`) raw = argv[i + 1] ?? '';
    else if (argv[i].startsWith(`--${name}=`)) raw = argv[i].slice(name.length + 3);
  }
  return raw;
}

/** True when the flag `--name` is given. */
export function flagOption(name: string, argv: string[] = process.argv.slice(2)): boolean {
  return argv.includes(`--${name}`);
}
