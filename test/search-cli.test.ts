import t from 'tap';
import type { Test } from 'tap';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { runSearchCli } from '../src/search/search-command.js';
import { SearchSimulator, WORKSPACE } from './support/search-simulator.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

interface Cli {
  sim: SearchSimulator;
  env: Record<string, string | undefined>;
  run(argv: string[], env?: Record<string, string | undefined>): Promise<Run>;
}

async function cli(t: Test): Promise<Cli> {
  const sim = await SearchSimulator.start({ exportPollsBeforeReady: 1 });
  t.teardown(() => sim.close());
  const env = { SEARCH_BASE_URL: sim.baseUrl, SEARCH_API_KEY: sim.apiKey, SEARCH_WORKSPACE: WORKSPACE };
  return {
    sim,
    env,
    async run(argv, runEnv = env) {
      let stdout = '';
      let stderr = '';
      const code = await runSearchCli(argv, {
        stdout: { write: (text: string) => (stdout += text) },
        stderr: { write: (text: string) => (stderr += text), isTTY: false },
        env: runEnv,
        client: { sleep: async () => {}, retry: { retries: 2 } },
      });
      return { code, stdout, stderr };
    },
  };
}

/** The JSON-mode failure contract: stdout empty, stderr one `{error: {message, hint}}` object. */
function jsonError(t: Test, run: Run): { message: string; hint: string } {
  t.equal(run.stdout, '', 'stdout stays empty');
  const parsed = JSON.parse(run.stderr) as { error: { message: string; hint: string } };
  t.same(Object.keys(parsed), ['error']);
  t.same(Object.keys(parsed.error), ['message', 'hint']);
  t.ok(parsed.error.hint.length > 0, 'a hint is given');
  return parsed.error;
}

t.test('JSON mode prints {results, total, cursor}; the cursor fetches the next page', async (t) => {
  const { sim, run } = await cli(t);
  const first = await run(['class:car>=2', '--json', '--limit', '3']);
  t.equal(first.code, 0);
  t.equal(first.stderr, '');
  const page = JSON.parse(first.stdout) as { results: { id: string; filename: string }[]; total: number; cursor: string | null };
  t.same(Object.keys(page), ['results', 'total', 'cursor']);
  t.same(page.results.map((r) => r.id), ['nc-01', 'pl-09', 'pl-07']);
  t.equal(page.results[0].filename, 'street-night-01.jpg', 'default fields requested');
  t.equal(page.total, 6);
  t.type(page.cursor, 'string');
  t.same(sim.requestsTo('workspace')[0].body, {
    query: 'class:car>=2', pageSize: 3, fields: ['filename', 'width', 'height', 'tags', 'projects', 'split'],
  });

  const second = JSON.parse((await run(['class:car>=2', '--json', '--limit', '3', '--cursor', page.cursor as string])).stdout) as typeof page;
  t.same(second.results.map((r) => r.id), ['pl-05', 'pl-02', 'pl-01']);
  const third = JSON.parse((await run(['class:car>=2', '--json', '--limit', '3', '--cursor', second.cursor as string])).stdout) as typeof page;
  t.same(third, { results: [], total: 6, cursor: null });

  const narrow = JSON.parse((await run(['tag:dusk', '--json', '--fields', 'owner, aspectRatio'])).stdout) as typeof page;
  t.same(narrow.results, [
    { id: 'pl-06', mediaType: 'image', owner: 'alice', aspectRatio: 1.3333 },
    { id: 'pl-05', mediaType: 'image', owner: 'alice', aspectRatio: 1.3333 },
  ]);
});

t.test('human mode prints a table and the next --cursor', async (t) => {
  const { run } = await cli(t);
  const first = await run(['tag:night', '--limit', '2']);
  t.equal(first.code, 0);
  t.equal(first.stderr, '');
  const lines = first.stdout.split('\n');
  t.match(lines[0], /^ID\s+FILENAME\s+SIZE\s+PROJECTS\s+SPLIT\s+TAGS$/);
  t.match(lines[1], /^nc-04\s+street-night-04\.jpg\s+1920x1080\s+night-cams\s+test\s+night$/);
  t.match(lines[2], /^nc-03\s+/);
  t.match(first.stdout, /2 of 7 results\.\nNext page: --cursor (ct-\d+)\n$/);
  const cursor = /--cursor (ct-\d+)/.exec(first.stdout)?.[1] as string;
  const mismatched = await run(['tag:night', '--limit', '5', '--cursor', cursor]);
  t.equal(mismatched.code, 1, 'a cursor belongs to its query and page size');
  const rest = await run(['tag:night', '--limit', '2', '--cursor', cursor]);
  t.match(rest.stdout, /^ID .*\nnc-02 /);

  const gate = await run(['project:night-cams project:parking-lot', '--fields', 'projects,annotations']);
  t.match(gate.stdout, /^ID\s+PROJECTS\s+CLASSES\n/);
  t.match(gate.stdout, /pl-12\s+parking-lot, night-cams\s+person\n/);
  t.match(gate.stdout, /3 of 3 results\.\nNo more results\.\n$/);
  t.equal((await run(['tag:nothing-has-this'])).stdout, 'No results (total 0).\n');
  const excluded = JSON.parse((await run(['--json', '--limit', '250', '--', '-class:car'])).stdout) as { total: number };
  t.equal(excluded.total, 18, 'a query starting with a minus follows --');
});

t.test('a malformed query exits 1 without calling the hosted API', async (t) => {
  const { sim, run } = await cli(t);
  const human = await run(['split:train min-width:wide']);
  t.equal(human.code, 1);
  t.equal(human.stdout, '');
  t.equal(human.stderr.split('\n').slice(0, 3).join('\n'), [
    'error: Invalid query at column 23: min-width: expects a whole number (0 or more), got "wide"',
    '  split:train min-width:wide',
    '                        ^',
  ].join('\n'));
  t.match(human.stderr, /\nhint: Fix the query at the caret/);

  const json = await run(['(tag:a OR tag:b', '--json']);
  t.equal(json.code, 1);
  const error = jsonError(t, json);
  t.equal(error.message, 'Invalid query at column 1: Unclosed parenthesis: add the matching ")"\n  (tag:a OR tag:b\n  ^');
  t.equal(sim.requests.length, 0);
});

t.test('exit codes follow docs/SEARCH.md, with the JSON error contract', async (t) => {
  const { sim, env, run } = await cli(t);
  const cases: [name: string, argv: string[], env: Record<string, string | undefined>, code: number, message: RegExp][] = [
    ['invalid key (401)', ['*'], { ...env, SEARCH_API_KEY: 'not-the-key-0000' }, 2, /answered 401 .*Invalid api_key: \*\*\*/],
    ['missing key', ['*'], { ...env, SEARCH_API_KEY: undefined }, 2, /No API key/],
    ['no workspace selected', ['*'], { ...env, SEARCH_WORKSPACE: '' }, 2, /No workspace selected/],
    ['workspace not visible to the key (403)', ['*', '-w', 'rival'], env, 3, /answered 403 .*no access to workspace rival/],
    ['workspace not found (404)', ['*', '--workspace', 'nowhere'], env, 3, /answered 404 .*Workspace nowhere not found/],
    ['export dataset not found (404)', ['*', '--export', '-d', 'no-such-project', '-l', t.testdir()], env, 3, /Project no-such-project not found/],
    ['cursor of another query (400)', ['tag:day', '--cursor', 'ct-999'], env, 1, /answered 400 .*Invalid continuationToken/],
    ['missing base URL', ['*'], { ...env, SEARCH_BASE_URL: undefined }, 1, /No base URL/],
    ['bad base URL flag', ['*', '--base-url', 'ftp://x'], env, 1, /--base-url must be an http\(s\) URL/],
    ['unreachable API', ['*', '--base-url', 'http://127.0.0.1:9'], env, 1, /Could not reach the hosted search API/],
    ['--limit of 0', ['*', '--limit', '0'], env, 1, /--limit must be an integer of 1 or more/],
    ['--limit not a number', ['*', '--limit', 'ten'], env, 1, /--limit must be an integer/],
    ['unknown field', ['*', '--fields', 'tags,name'], env, 1, /Unknown field for this search: name/],
    ['export option without --export', ['*', '-f', 'yolo', '--no-extract'], env, 1, /-f\/--format, --no-extract cannot be used without --export/],
    ['paging option with --export', ['*', '--export', '--cursor', 'x'], env, 1, /--cursor cannot be used with --export/],
    ['dataset and annotation group', ['*', '--export', '-d', 'warehouse', '-g', 'objects'], env, 1, /cannot be combined/],
    ['unknown option', ['*', '--bogus'], env, 1, /unknown option '--bogus'/],
    ['query starting with a minus', ['-class:car'], env, 1, /unknown option '-class:car'/],
    ['missing query', [], env, 1, /missing required argument 'query'/],
    ['too many arguments', ['tag:a', 'tag:b'], env, 1, /too many arguments/],
  ];
  for (const [name, argv, runEnv, code, message] of cases) {
    const before = sim.requests.length;
    const human = await run(argv, runEnv);
    t.equal(human.code, code, `${name}: exit code`);
    t.equal(human.stdout, '', `${name}: no stdout`);
    t.match(human.stderr, /^error: .*\n(.*\n)*hint: .+\n$/, `${name}: error and hint lines`);
    const json = await run([...argv, '--json'], runEnv);
    t.equal(json.code, code, `${name}: exit code in JSON mode`);
    t.match(jsonError(t, json).message, message, `${name}: message`);
    if (code === 1 && !/\(400\)|unreachable/.test(name)) t.equal(sim.requests.length, before, `${name}: nothing sent`);
  }
  const keyless = await run(['*'], { ...env, SEARCH_API_KEY: undefined });
  t.match(keyless.stderr, /hint: Pass -k\/--api-key or set SEARCH_API_KEY\./);
  const invalid = await run(['*', '--json'], { ...env, SEARCH_API_KEY: 'not-the-key-0000' });
  t.notOk(invalid.stderr.includes('not-the-key-0000'), 'the key is redacted from the error');
});

t.test('5xx and 429 are retried; a lasting 5xx exits 1', async (t) => {
  const { sim, run } = await cli(t);
  sim.inject({ status: 429, retryAfter: '1' });
  sim.inject({ status: 503 });
  t.equal((await run(['tag:snow', '--json'])).code, 0);
  t.equal(sim.requestsTo('workspace').length, 3);
  sim.inject({ status: 500, times: 3, body: { error: 'search index offline', hint: 'Try again in a minute.' } });
  const failed = await run(['tag:snow', '--json']);
  t.equal(failed.code, 1);
  t.same(jsonError(t, failed), { message: 'Hosted search API answered 500 to POST /acme/search/v1: search index offline', hint: 'Try again in a minute.' });
});

t.test('flags override the environment', async (t) => {
  const { sim, run } = await cli(t);
  const ok = await run(['tag:shelf', '--json', '--base-url', sim.baseUrl, '-k', sim.apiKey, '-w', WORKSPACE], {
    SEARCH_BASE_URL: 'http://127.0.0.1:9', SEARCH_API_KEY: 'wrong-key-1234', SEARCH_WORKSPACE: 'rival',
  });
  t.equal(ok.code, 0);
  t.equal((JSON.parse(ok.stdout) as { total: number }).total, 3);
});

t.test('--export downloads and extracts, or keeps the zip with --no-extract', async (t) => {
  const { sim, run } = await cli(t);
  const location = t.testdir();
  const json = await run(['class:spill', '--export', '-f', 'voc', '-l', location, '--json']);
  t.equal(json.code, 0);
  t.equal(json.stderr, '');
  const result = JSON.parse(json.stdout) as { export: { id: string; location: string; zip: string | null; files: string[] } };
  t.same(result.export.files, ['README.dataset.txt', 'export/_annotations.voc.json', 'export/images/spill-01.jpg', 'export/images/spill-02.jpg']);
  t.equal(result.export.zip, null);
  t.equal(result.export.location, path.resolve(location));
  t.same(sim.requestsTo('export-start')[0].body, { query: 'class:spill', format: 'voc' });

  const keep = await run(['tag:dock', '--export', '-l', location, '--name', 'docks', '-g', 'objects', '--no-extract']);
  t.equal(keep.code, 0);
  t.match(keep.stdout, /^Export exp-\d+: zip saved to (.*)\n$/);
  t.ok(keep.stdout.endsWith(`${path.join(location, 'docks.zip')}\n`));
  t.ok(existsSync(path.join(location, 'docks.zip')));
  t.same(sim.requestsTo('export-start')[1].body, { query: 'tag:dock', format: 'coco', annotationGroup: 'objects', name: 'docks' });

  const human = await run(['tag:hazard', '--export', '-l', path.join(location, 'hazards')]);
  t.match(human.stdout, /^Export exp-\d+: 4 files extracted to .*hazards\n$/);
});

t.test('--help prints usage and exits 0', async (t) => {
  const { run } = await cli(t);
  const help = await run(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /Usage: edge-events search \[options\] <query>/);
  for (const flag of ['--limit', '--cursor', '--fields', '--json', '--export', '-f, --format', '-l, --location', '-d, --dataset',
    '-g, --annotation-group', '--name', '--no-extract', '-k, --api-key', '-w, --workspace', '--base-url']) {
    t.ok(help.stdout.includes(flag), flag);
  }
});
