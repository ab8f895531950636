/** Command-line options of the harness scripts, given as `--name value` or `--name=value`. */

/**
 * Reads the numeric option `--name`.
 * @param fallback the value when the option is absent
 * @throws Error naming the option when its value is not a positive number
 */
export function numberOption(name: string, fallback: number, argv: string[] = process.argv.slice(2)): number {
  let raw: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === `--${name}`) raw = argv[i + 1];
    else if (argv[i].startsWith(`--${name}=`)) raw = argv[i].slice(name.length + 3);
  }
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} expects a positive number, got ${JSON.stringify(raw)}`);
  return value;
}
