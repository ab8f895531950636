/**
 * Where an installed package's dependencies are: the node_modules folders of its own install's
 * tree, never another install's nor the home folder's (docs/OPERATIONS.md, "Install on a device").
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * The node_modules folders npm installed the package at `root` and its dependencies into, in
 * Node's lookup order: Node's lookup from `root` (`require.resolve.paths`, which climbs every
 * ancestor and adds the home folder's `.node_modules` and `.node_libraries`) cut to `root`'s own
 * node_modules and the enclosing node_modules of the tree `root` sits in, those that hold `root`
 * and belong to a package or a project (a package.json beside them: npm hoists a dependency there).
 * A node_modules of an ancestor that does not hold `root`, the home folder's, and npm's global
 * `lib/node_modules` (no package.json beside it: every global package keeps its dependencies in its
 * own node_modules) are another install's, never pruned (docs/OPERATIONS.md, "Install on a device").
 * Absolute paths.
 */
export function installTreeNodeModules(root: string): string[] {
  const dir = path.resolve(root);
  const own = path.join(dir, 'node_modules');
  const paths = createRequire(path.join(dir, 'package.json')).resolve.paths('any-package') ?? [];
  return paths.filter((nodeModules) => {
    if (nodeModules === own) return true;
    const inside = path.relative(nodeModules, dir);
    const holdsRoot = inside !== '' && !inside.startsWith('..') && !path.isAbsolute(inside);
    return holdsRoot && fs.existsSync(path.join(path.dirname(nodeModules), 'package.json'));
  });
}

/**
 * The directory of `name` as Node resolves it from the package at `root` within its install's tree
 * (`installTreeNodeModules`), or undefined: never another install's, nor the home folder's.
 */
export function installedPackageDir(root: string, name: string): string | undefined {
  for (const nodeModules of installTreeNodeModules(root)) {
    const dir = path.join(nodeModules, name);
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
  }
  return undefined;
}
