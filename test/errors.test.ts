/**
 * Errors (docs/API.md, "Errors"; docs/OPERATIONS.md, "Logs"): the registry, the docs' table and
 * the error responses of /openapi.json agree; every registered code is answered somewhere, and
 * comments that give a code's status give the registry's; an
 * error that wraps a lower one keeps it as its cause, and a 5xx is logged with that cause's
 * errno, syscall, path and message.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import ts from 'typescript';
import { AppError, errorFromReport, errorRegistry, errorReport, fromDiskError, fromLogWriteError, type ErrorCode } from '../src/errors.js';
import { packageRoot } from '../src/paths.js';
import { fixture, getJson, postJson, smallEvent } from './support/events.js';
import { postFile } from './support/multipart.js';
import { spawnStore } from '../scripts/lib/spawned-store.js';
import { startStore, tempDataDir } from './support/store-server.js';
import { until } from './support/waiting.js';

const codes = Object.keys(errorRegistry) as ErrorCode[];

/** Every TypeScript file under src/, as absolute paths. */
function sourceFiles(): string[] {
  const src = path.join(packageRoot, 'src');
  return fs.readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts')).map((file) => path.join(src, file));
}

/** The text of `## <title>` in docs/API.md, up to the next section. */
function apiSection(title: string): string {
  const text = fs.readFileSync(path.join(packageRoot, 'docs', 'API.md'), 'utf8');
  const start = text.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`docs/API.md has no section "${title}"`);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/** Rows of the code table of docs/API.md, "Errors": code, status, message. */
function documentedCodes(): { code: string; status: number; message: string }[] {
  return [...apiSection('Errors').matchAll(/^\| `([a-z_]+)` \| (\d{3}) \| ([^|]+?) \|/gm)].map((m) => ({ code: m[1], status: Number(m[2]), message: m[3] }));
}

t.test('docs/API.md, "Errors" lists every registry code with its status and message, and no other', async (t) => {
  const rows = documentedCodes();
  t.ok(rows.length >= 25, `${rows.length} rows read`);
  t.same(rows.map((row) => row.code).filter((code, i, all) => all.indexOf(code) !== i), [], 'no code listed twice');
  t.same(rows.filter((row) => !(row.code in errorRegistry)).map((row) => row.code), [], 'no row for a code the registry lacks');
  for (const code of codes) {
    const row = rows.find((r) => r.code === code);
    t.same(row && { status: row.status, message: row.message }, { status: errorRegistry[code].status, message: errorRegistry[code].message }, code);
  }
});

t.test('every error response of /openapi.json has a status of the registry, in an error shape', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const { paths } = (await getJson(`${store.url}/openapi.json`)).body as { paths: Record<string, Record<string, { responses: Record<string, any> }>> };
  const statuses = new Set(codes.map((code) => errorRegistry[code].status));
  const isErrorShape = (schema: any) => schema?.$ref === '#/components/schemas/Error' || (schema?.required?.length === 1 && schema.required[0] === 'error');
  let errorResponses = 0;
  for (const [route, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue;
        const schema = response.content?.['application/json']?.schema;
        // /health's 503 is its own body, not a registry error (docs/API.md, "Errors").
        if (route === '/health' && status === '503') continue;
        errorResponses++;
        if (!statuses.has(Number(status))) t.fail(`${method.toUpperCase()} ${route} lists ${status}, a status no registry code has`);
        // The operator page's HTML answers its errors as an HTML page (docs/API.md, "Browsers").
        if (route === '/' && method === 'get' && response.content?.['text/html'] !== undefined) continue;
        if (!isErrorShape(schema)) t.fail(`${method.toUpperCase()} ${route} ${status} is not in an error shape: ${JSON.stringify(schema)}`);
      }
    }
  }
  t.ok(errorResponses > 80, `${errorResponses} error responses checked`);
  const documented = new Set(documentedCodes().map((row) => row.status));
  t.same([...statuses].filter((status) => !documented.has(status)), [], 'every registry status is in the docs table');
});

t.test('every registry code is answered somewhere in src', async (t) => {
  // The string literals of the code, parsed by TypeScript: a comment naming a code is not a use.
  // The registry spells its keys bare (`disk_full: {`); a use is a literal (`new AppError('disk_full'`).
  const literals = new Set<string>();
  let files = 0;
  const collect = (node: ts.Node) => {
    if (ts.isStringLiteralLike(node)) literals.add(node.text);
    ts.forEachChild(node, collect);
  };
  for (const file of sourceFiles()) {
    files++;
    collect(ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true));
  }
  t.ok(files > 50, `${files} source files read`);
  for (const code of codes) t.ok(literals.has(code), `${code} is used`);
});

t.test('every "code (status)" a comment in src/ writes gives the registry status of that code', async (t) => {
  // The registry is the one place a status is decided; a comment that disagrees misleads its
  // reader. A mention is a code, then a parenthesis and three digits: "disk_full (507)".
  const mention = /`?\b([a-z]+(?:_[a-z]+)+)`? \((\d{3})\b/g;
  const wrong: string[] = [];
  let checked = 0;
  for (const file of sourceFiles()) {
    fs.readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
      for (const [, code, status] of line.matchAll(mention)) {
        if (!(code in errorRegistry)) continue;
        checked++;
        const registered = errorRegistry[code as ErrorCode].status;
        if (registered !== Number(status)) wrong.push(`${path.relative(packageRoot, file)}:${i + 1}: ${code} (${status}), registry ${registered}`);
      }
    });
  }
  t.ok(checked >= 40, `${checked} mentions checked`);
  t.same(wrong, [], 'no comment gives a code another status than the registry');
});

t.test('an error that wraps a lower one keeps it as its cause', async (t) => {
  const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
  const eio = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO', errno: -5, syscall: 'fdatasync' });
  t.match(fromDiskError(enospc), { code: 'disk_full', status: 507, cause: enospc });
  t.match(fromDiskError(eio), { code: 'store_failure', status: 500, cause: eio });
  t.match(fromLogWriteError(eio), { code: 'disk_io_error', status: 503, cause: eio, headers: { 'Retry-After': '1' } }, 'an EIO appending to the log: the segment is given up');
  t.match(fromLogWriteError(enospc), { code: 'disk_full', status: 507, cause: enospc });
  const refusal = new AppError('event_finalized');
  t.equal(fromDiskError(refusal), refusal, 'a refusal decided below passes as it is');
  t.notOk('cause' in new AppError('not_found'), 'an error without a cause has no cause property');
  t.same(new AppError('range_not_satisfiable', undefined, { headers: { 'Content-Range': 'bytes */3' } }).headers, { 'Content-Range': 'bytes */3' });

  const report = errorReport(eio);
  t.same(structuredClone(report), report, 'a report survives postMessage whole');
  const again = errorFromReport(structuredClone(report));
  t.match(again, { name: 'Error', message: eio.message, code: 'EIO', errno: -5, syscall: 'fdatasync', stack: eio.stack });
  t.same(errorReport('not an error'), { name: 'Error', message: 'not an error' });
});

t.test('a 500 caused by a real disk error logs its cause: errno, syscall, path and message', async (t) => {
  const dataDir = tempDataDir();
  const store = await spawnStore({ PORT: '0', DATA_DIR: dataDir, CLEANUP_INTERVAL_SECONDS: '3600' });
  t.teardown(() => void store.child.kill('SIGKILL'));
  const draft = (await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }))).body;
  // staging/ becomes a file: the upload's staging file cannot be opened (ENOTDIR), a real fs error.
  const staging = path.join(dataDir, 'staging');
  fs.rmSync(staging, { recursive: true, force: true });
  fs.writeFileSync(staging, '');
  const answer = await postFile(`${store.url}/v2/events/${draft.id}/videos`, fixture('cat-zoom.mp4'));
  t.same(answer, { status: 500, body: { detail: 'Internal store failure' } }, 'the client reads the registry message, no path');

  const failedLine = () => store.output().split('\n').find((l) => l.includes('"msg":"request failed"'));
  await until('the "request failed" log line', () => failedLine() !== undefined);
  const line = failedLine()!;
  const { level, err } = JSON.parse(line);
  t.equal(level, 50, 'at error level');
  t.match(err, { type: 'AppError', code: 'store_failure', status: 500, message: 'Internal store failure' });
  t.match(err.cause, {
    type: 'Error',
    code: 'ENOTDIR',
    errno: Number,
    syscall: 'open',
    path: new RegExp(`^${staging.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/[0-9a-f-]+\\.part$`),
    message: /^ENOTDIR: not a directory, open /,
    stack: /ENOTDIR/,
  }, 'the cause is the fs error, with its fields');
  t.equal((await getJson(`${store.url}/health`)).status, 200, 'the store still serves');
});
