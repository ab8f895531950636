/**
 * The control area of the Debian package (docs/OPERATIONS.md, "The Debian package"): the
 * `control` file's fields, `Installed-Size` as dpkg-gencontrol counts it, and `md5sums`.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** Node's `process.arch` (and the registry's `node-linux-<arch>`) of each Debian architecture the package is built for. */
export const NODE_ARCH: Readonly<Record<string, string>> = { amd64: 'x64', arm64: 'arm64' };

/** The fields of DEBIAN/control the package script fills in. */
export interface ControlFields {
  version: string;
  architecture: string;
  maintainer: string;
  /** Installed size in KiB (see `installedSizeKiB`). */
  installedSizeKiB: number;
}

/** Debian's version syntax (deb-version(5)): [epoch:]upstream[-revision], upstream starting with a digit. */
const DEBIAN_VERSION = /^(\d+:)?\d[A-Za-z0-9.+~:-]*$/;

/**
 * Checks a version string against deb-version(5).
 * @throws Error naming the version when dpkg would refuse it
 */
export function checkDebianVersion(version: string): string {
  if (!DEBIAN_VERSION.test(version)) throw new Error(`${JSON.stringify(version)} is not a Debian version (deb-version(5)): it starts with a digit and holds only letters, digits and . + ~ : -`);
  return version;
}

/** A person as Debian's Maintainer field takes one (deb-control(5)): `Name <email>`. */
const PERSON = /^[^<>\n]+ <[^<>@\s]+@[^<>\s]+>$/;

/**
 * The Maintainer field from package.json's `author` (npm's `people fields`: a `Name <email>`
 * string, or `{name, email}`).
 * @throws Error when package.json names no author with an email
 */
export function maintainerField(author: unknown): string {
  const person = typeof author === 'object' && author !== null ? `${(author as { name?: string }).name} <${(author as { email?: string }).email}>` : String(author);
  if (!PERSON.test(person)) throw new Error(`package.json's author ${JSON.stringify(author)} is not a maintainer Debian takes: set it to "Name <email>" (deb-control(5), Maintainer)`);
  return person;
}

/**
 * The text of DEBIAN/control. `Depends`: Node 20 or newer from Debian's or NodeSource's
 * `nodejs` (the engines package.json lists: 20, 22, 24, 26), and adduser for the postinst's
 * system user; init-system-helpers (deb-systemd-helper) is Essential and needs no entry.
 */
export function controlText(fields: ControlFields): string {
  return [
    'Package: edge-events',
    `Version: ${fields.version}`,
    `Architecture: ${fields.architecture}`,
    `Maintainer: ${fields.maintainer}`,
    `Installed-Size: ${fields.installedSizeKiB}`,
    'Depends: nodejs (>= 20), adduser',
    'Section: database',
    'Priority: optional',
    'Description: on-device event store for vision pipelines',
    ' edge-event-store keeps the events of a vision pipeline on the device: durable ingest,',
    ' indexed queries and Range downloads over HTTP, supervised by systemd (edge-events.service).',
    '',
  ].join('\n');
}

/** Every entry under `root` but DEBIAN/, relative to it, parents before children. */
function entriesUnder(root: string): fs.Dirent[] {
  return (fs.readdirSync(root, { recursive: true, withFileTypes: true }) as fs.Dirent[]).filter((entry) => path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep)[0] !== 'DEBIAN');
}

/**
 * Installed-Size in KiB as dpkg-gencontrol(1) computes it: each regular file's size rounded up
 * to 1 KiB, plus 1 KiB for every other object (directory, symlink).
 */
export function installedSizeKiB(root: string): number {
  let kib = 0;
  for (const entry of entriesUnder(root)) {
    kib += entry.isFile() ? Math.ceil(fs.lstatSync(path.join(entry.parentPath, entry.name)).size / 1024) : 1;
  }
  return kib;
}

/** The text of DEBIAN/md5sums: `<md5>  <path without leading slash>` for each regular file. */
export function md5sumsText(root: string): string {
  const files = entriesUnder(root)
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
  return files.map((file) => `${createHash('md5').update(fs.readFileSync(file)).digest('hex')}  ${path.relative(root, file).split(path.sep).join('/')}\n`).join('');
}
