/**
 * Reading a setting from the environment by its name in the settings table (src/settings.ts,
 * docs/OPERATIONS.md, "Settings"): the readers loadConfig (src/config.ts) and the NATS settings
 * (src/nats-settings.ts) share. A bad value throws ConfigError naming the setting.
 */
import { ConfigError, type SettingName } from './settings.js';

/** The environment (`process.env`). */
export type Env = Record<string, string | undefined>;

/** A setting's value, trimmed; undefined when unset or blank. */
export function text(env: Env, name: SettingName): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/**
 * A number setting, an integer unless `opts.integer` is false.
 * @throws ConfigError when it is no such number from `opts.min` (0) to `opts.max`
 */
export function number(env: Env, name: SettingName, fallback: number, opts: { integer?: boolean; min?: number; max?: number } = {}): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  const { integer = true, min = 0, max = Number.MAX_SAFE_INTEGER } = opts;
  const kind = integer ? 'an integer' : 'a number';
  if (!Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < min || value > max) {
    throw new ConfigError(name, `${kind} from ${min} to ${max}`, raw);
  }
  return value;
}

/** A comma-separated setting's items, trimmed, none empty; [] when unset. */
export function list(env: Env, name: SettingName): string[] {
  return (text(env, name) ?? '').split(',').map((item) => item.trim()).filter((item) => item !== '');
}
