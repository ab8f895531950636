/**
 * The README as a new user reads it: short (what it is, the two commands, a
 * Python example, the supported boxes, links), its Python example runs as written against a real
 * store with Debian's python3 and prints what it stored, and the links of the README and the
 * docs (docs/PERFORMANCE.md, where its figures went, among them) reach a file and, with an
 * anchor, a heading there.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { packageRoot } from '../src/paths.js';
import { fixture, getJson } from './support/events.js';
import { requireProgram } from './support/host-program.js';
import { startStore, tempDataDir } from './support/store-server.js';

const run = promisify(execFile);
const README = path.join(packageRoot, 'README.md');
const readme = fs.readFileSync(README, 'utf8');

/** The anchor GitHub gives a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** The relative links of a Markdown file that do not reach a file, or a heading of it. */
function brokenLinks(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  const broken: string[] = [];
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/.test(target!)) continue; // http:, https:, mailto:
    const [where, anchor] = target!.split('#');
    const linked = where ? path.resolve(path.dirname(file), where) : file;
    if (!fs.existsSync(linked)) {
      broken.push(`${target}: no such file`);
      continue;
    }
    if (anchor === undefined || !linked.endsWith('.md')) continue;
    const headings = [...fs.readFileSync(linked, 'utf8').matchAll(/^#+ (.*)$/gm)].map(([, heading]) => anchorOf(heading!));
    if (!headings.includes(anchor)) broken.push(`${target}: no heading #${anchor}`);
  }
  return broken;
}

t.test('the README keeps to what a new user needs, in under 150 lines', async (t) => {
  const lines = readme.split('\n').length;
  t.ok(lines < 150, `${lines} lines`);
  t.match(readme, 'npm install && npm start', 'the two commands');
  t.match(readme, 'npm install && npm test');
  for (const heading of ['## Quick start', '## From Python', '## Supported boxes', '## Read more']) t.match(readme, `\n${heading}\n`, heading);
  t.notMatch(readme, /Fastify \+ SQLite \|/, 'no benchmark table: the figures are in docs/PERFORMANCE.md');
  t.match(readme.replace(/\s+/g, ' '), 'In a container, a compose service name that other services use to reach the store goes in `ALLOWED_HOSTS`', 'containers: the compose service name in ALLOWED_HOSTS');
  const usage = fs.readFileSync(path.join(packageRoot, 'docs', 'USAGE.md'), 'utf8');
  t.match(usage, /services:\n {2}event-store:\n {4}environment:\n {6}ALLOWED_HOSTS: event-store/, 'and docs/USAGE.md shows it in a compose file');
});

t.test('the README\'s Python example runs as written against a store', async (t) => {
  const store = await startStore();
  t.teardown(() => store.stop());
  const example = /```python\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!example) throw new Error('the README has no ```python block');
  const dir = tempDataDir();
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'example.py'), example);
  fs.writeFileSync(path.join(dir, 'frame.jpg'), fixture('cat.jpg'));
  const { stdout } = await run(requireProgram('python3'), ['example.py'], { cwd: dir, env: { ...process.env, STORE_URL: store.url } });
  const [stored, listed, ...rest] = stdout.trim().split('\n');
  const id = /^stored (\S+) \[\]$/.exec(stored!)?.[1];
  t.ok(id, `it stored an event, with no warning: ${stored}`);
  t.match(listed, new RegExp(`^\\S+Z ${id} \\['scratch'\\]$`), 'and listed it back with its detection');
  t.same(rest, [], 'one event listed');
  const event = (await getJson(`${store.url}/v2/events/${id}`)).body;
  t.match(event, { device_id: 'cam-1', event_schema: 'quality_check', custom_metadata: { line: 'B' } }, 'stored as sent');
  const image = await fetch(`${store.url}/images/${event.images[0].file_id}`);
  t.same(Buffer.from(await image.arrayBuffer()), fixture('cat.jpg'), 'with its image byte for byte');
});

t.test('the links of the README and the docs reach a file and a heading', async (t) => {
  const docs = fs.readdirSync(path.join(packageRoot, 'docs')).filter((name) => name.endsWith('.md')).map((name) => path.join(packageRoot, 'docs', name));
  t.ok(docs.some((file) => file.endsWith('PERFORMANCE.md')), 'docs/PERFORMANCE.md among them');
  for (const file of [README, path.join(packageRoot, 'CONTRIBUTING.md'), ...docs]) t.same(brokenLinks(file), [], path.relative(packageRoot, file));
});
