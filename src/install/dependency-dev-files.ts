/**
 * The files of an installed tree's dependencies that Node never loads at run time (docs/OPERATIONS.md,
 * "Footprint"): what their authors publish for debugging and for the TypeScript compiler, not
 * for the code that runs. Only under `node_modules`: the store's own files are never touched.
 *
 * - Source maps (`*.js.map`, `*.css.map`, `*.d.ts.map`, ...): read by a debugger, or by Node only
 *   under `--enable-source-maps`, which the store does not set; when a map is missing Node prints
 *   the generated file's positions (Node's documentation, "Source map v3 support").
 * - TypeScript sources (`*.ts`, `*.mts`, `*.cts`, `*.tsx`, never the declarations `*.d.ts`,
 *   `*.d.mts`, `*.d.cts`, `*.d.<ext>.ts`): Node refuses to strip types from a file under node_modules
 *   (`ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING`, Node's documentation, "Modules: TypeScript"),
 *   so they are never loaded; the packages' `exports` point Node at their compiled `.js`.
 *
 * - Development folders at a package's top level (`test`, `tests`, `__tests__`, `bench`,
 *   `benchmark`, `benchmarks`, `.github`, and an editor's `.claude`): published with the package
 *   when its `files` list or `.npmignore` leaves them in, required by nothing it exports (92 folders,
 *   3.8 MB of the production tree on 2026-12-02: bintrees' and pino's tests the most). A package's own folder
 *   so named deeper down (`lib/test`) stays, and so does a package named `test`.
 *
 * Declarations, READMEs and licences stay: declarations are what a reader of the installed tree
 * would open, and some packages carry their licence only in their README.
 */
import fs from 'node:fs';
import path from 'node:path';

/** A source map, named after the file it maps: `<name>.(js|cjs|mjs|jsx|ts|cts|mts|tsx|css).map`. */
const SOURCE_MAP = /\.(?:[cm]?[jt]sx?|css)\.map$/;

/** A TypeScript source, not a declaration file. */
const TYPESCRIPT_SOURCE = /\.(?:[cm]?ts|tsx)$/;
/** A declaration file: `x.d.ts`, `x.d.mts`, `x.d.cts`, and TypeScript 5's `x.d.css.ts` for other extensions. */
const DECLARATION = /\.d(?:\.[^.]+)?\.[cm]?ts$/;

/** What a dependency file is, when it is one Node never loads. */
export type DevFileKind = 'source map' | 'TypeScript source' | 'development folder';

/** The development folders of a package's top level (the rule above). */
const DEV_FOLDERS = new Set(['test', 'tests', '__tests__', 'bench', 'benchmark', 'benchmarks', '.github', '.claude']);

/** The kind of `name` (a file's base name), or undefined when Node may load it. */
export function devFileKind(name: string): DevFileKind | undefined {
  if (SOURCE_MAP.test(name)) return 'source map';
  if (TYPESCRIPT_SOURCE.test(name) && !DECLARATION.test(name)) return 'TypeScript source';
  return undefined;
}

/**
 * Every source map and TypeScript source under `nodeModules` (the rule above), absolute paths
 * with their kind. Symbolic links are neither followed nor listed.
 * @param nodeModules an installed tree's `node_modules` folder (throws ENOENT when absent)
 */
export function dependencyDevFiles(nodeModules: string): { file: string; kind: DevFileKind }[] {
  const found: { file: string; kind: DevFileKind }[] = [];
  for (const entry of fs.readdirSync(nodeModules, { recursive: true, withFileTypes: true }) as fs.Dirent[]) {
    if (!entry.isFile()) continue;
    const kind = devFileKind(entry.name);
    if (kind) found.push({ file: path.join(entry.parentPath, entry.name), kind });
  }
  return found;
}

/**
 * The development folders under `nodeModules` (the rule above): each package's, found by its
 * package.json, scoped packages and nested node_modules included. Absolute paths; symbolic links
 * are neither followed nor listed.
 * @param nodeModules an installed tree's `node_modules` folder (throws ENOENT when absent)
 */
export function dependencyDevFolders(nodeModules: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(nodeModules, { recursive: true, withFileTypes: true }) as fs.Dirent[]) {
    if (!entry.isDirectory() || !DEV_FOLDERS.has(entry.name)) continue;
    const packageDir = entry.parentPath;
    // A package's top level: its folder holds package.json and sits right in a node_modules (or a scope of one).
    const parent = path.basename(path.dirname(packageDir));
    const inNodeModules = parent === 'node_modules' || (parent.startsWith('@') && path.basename(path.dirname(path.dirname(packageDir))) === 'node_modules');
    if (inNodeModules && fs.existsSync(path.join(packageDir, 'package.json'))) found.push(path.join(packageDir, entry.name));
  }
  return found;
}
