import t from 'tap';
import type { Test } from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Command } from 'commander';
import { registerMcpCommand } from '../src/mcp/mcp-command.js';
import { createSearchMcpServer } from '../src/mcp/mcp-server.js';
import { registerSearchCommand } from '../src/search/search-command.js';
import { SearchSimulator, WORKSPACE } from './support/search-simulator.js';

interface Session {
  sim: SearchSimulator;
  call(name: string, args: Record<string, unknown>): Promise<{ isError: boolean; text: string }>;
  client: Client;
}

async function session(t: Test, env?: Record<string, string | undefined>): Promise<Session> {
  const sim = await SearchSimulator.start();
  t.teardown(() => sim.close());
  const server = createSearchMcpServer({
    flags: {},
    env: env ?? { SEARCH_BASE_URL: sim.baseUrl, SEARCH_API_KEY: sim.apiKey, SEARCH_WORKSPACE: WORKSPACE },
    client: { sleep: async () => {}, retry: { retries: 1 } },
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client({ name: 'search-mcp-test', version: '1.0.0' });
  await client.connect(clientTransport);
  t.teardown(() => client.close());
  return {
    sim,
    client,
    async call(name, args) {
      const result = await client.callTool({ name, arguments: args });
      const content = result.content as { type: string; text: string }[];
      return { isError: result.isError === true, text: content[0].text };
    },
  };
}

t.test('lists the three tools, read-only and idempotent, with the parameters docs/SEARCH.md lists', async (t) => {
  const { client } = await session(t);
  const { tools } = await client.listTools();
  t.same(tools.map((tool) => tool.name).sort(), ['events_search', 'images_search', 'images_workspace_search']);
  const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
  for (const tool of tools) {
    t.equal(tool.annotations?.readOnlyHint, true, `${tool.name} readOnlyHint`);
    t.equal(tool.annotations?.idempotentHint, true, `${tool.name} idempotentHint`);
  }
  const project = byName.images_search.inputSchema;
  t.same(Object.keys(project.properties ?? {}).sort(), [
    'annotation_job', 'annotation_job_id', 'batch', 'batch_id', 'class_name', 'fields', 'in_dataset', 'like_image',
    'limit', 'mediaTypes', 'offset', 'project_id', 'prompt', 'tag',
  ]);
  t.same(project.required, ['project_id']);
  t.match(project.properties, { limit: { default: 50, maximum: 250 }, offset: { default: 0 } });
  t.equal(project.additionalProperties, false, 'unknown arguments are refused');
  const workspace = byName.images_workspace_search.inputSchema;
  t.same(Object.keys(workspace.properties ?? {}).sort(), ['continuation_token', 'fields', 'mediaTypes', 'page_size', 'query']);
  t.same(workspace.required, ['query'], 'query is required, with no default');
  t.notOk('default' in (workspace.properties as Record<string, object>).query);
  const pageSize = (workspace.properties as Record<string, { maximum?: number }>).page_size;
  // No maximum of the tool's own (src/mcp/mcp-server.ts): only the safe-integer bound zod's .int() writes.
  t.equal(pageSize.maximum, Number.MAX_SAFE_INTEGER, 'the hosted API sets the page size maximum');
  t.match(workspace.properties, { page_size: { default: 50 } });
});

t.test('images_search runs a project search', async (t) => {
  const { sim, call } = await session(t);
  const night = await call('images_search', { project_id: 'parking-lot', tag: 'night', fields: ['id', 'name'] });
  t.equal(night.isError, false);
  t.same(JSON.parse(night.text), {
    offset: 0, total: 3,
    results: [
      { id: 'pl-13', mediaType: 'image', name: 'gate-cam-03.jpg' },
      { id: 'pl-12', mediaType: 'image', name: 'gate-cam-02.jpg' },
      { id: 'pl-11', mediaType: 'image', name: 'gate-cam-01.jpg' },
    ],
  });
  t.same(sim.requestsTo('project')[0].body, { tag: 'night', offset: 0, limit: 50, fields: ['id', 'name'] });

  const everything = await call('images_search', {
    project_id: 'acme/warehouse', prompt: 'pallets', limit: 2, offset: 1, class_name: 'pallet', in_dataset: true,
  });
  t.same(JSON.parse(everything.text).results.map((r: { id: string }) => r.id), ['wh-03', 'wh-02']);
  t.same(sim.requestsTo('project')[1].body, { prompt: 'pallets', class_name: 'pallet', in_dataset: true, offset: 1, limit: 2 });
  t.equal(sim.requestsTo('project')[1].path, '/acme/warehouse/search');

  const staged = await call('images_search', { project_id: 'parking-lot', batch: true, batch_id: 'batch-7', like_image: 'pl-09' });
  t.same(JSON.parse(staged.text).results.map((r: { id: string }) => r.id), ['pl-09']);
  const jobs = await call('images_search', { project_id: 'warehouse', annotation_job: true, annotation_job_id: 'aj-5' });
  t.same(JSON.parse(jobs.text).results.map((r: { id: string }) => r.id), ['wh-09']);

  const videos = await call('images_search', { project_id: 'parking-lot', mediaTypes: ['video'] });
  const videoResults = JSON.parse(videos.text).results as { mediaType: string }[];
  t.ok(videoResults.length > 0 && videoResults.every((r) => r.mediaType === 'video'), 'mediaTypes filters the media');
  t.same(sim.requestsTo('project').at(-1)!.body, { offset: 0, limit: 50, mediaTypes: ['video'] });
});

t.test('unknown arguments are a tool error naming them, and nothing is sent', async (t) => {
  const { sim, call } = await session(t);
  const misspelled = await call('images_search', { project_id: 'parking-lot', tags: 'night' });
  t.equal(misspelled.isError, true);
  t.match(misspelled.text, /tags/);
  const old = await call('images_search', { project_id: 'parking-lot', query: 'cars' });
  t.equal(old.isError, true, 'the semantic text is prompt, as in the hosted API');
  t.match(old.text, /query/);
  const workspace = await call('images_workspace_search', { query: '*', page: 2 });
  t.equal(workspace.isError, true);
  t.match(workspace.text, /page/);
  const empty = await call('images_workspace_search', { query: '  ' });
  t.equal(empty.isError, true, 'query must not be blank');
  const absent = await call('images_workspace_search', {});
  t.equal(absent.isError, true, 'query is required');
  t.equal(sim.requests.length, 0);
});

t.test('images_workspace_search pages with continuation_token', async (t) => {
  const { sim, call } = await session(t);
  const first = await call('images_workspace_search', { query: '*', page_size: 20 });
  const page = JSON.parse(first.text) as { total: number; results: { id: string }[]; continuation_token: string | null };
  t.equal(page.total, 28);
  t.equal(page.results.length, 20);
  t.type(page.continuation_token, 'string');
  const second = JSON.parse((await call('images_workspace_search', { query: '*', page_size: 20, continuation_token: page.continuation_token })).text) as typeof page;
  t.equal(second.results.length, 8);
  t.equal(second.continuation_token, null);
  t.same(sim.requestsTo('workspace')[1].body, { query: '*', pageSize: 20, continuationToken: page.continuation_token });

  const cars = JSON.parse((await call('images_workspace_search', { query: 'class:car>=5 OR tag:hazard', fields: ['filename'] })).text) as {
    results: { id: string; filename: string }[];
  };
  t.same(cars.results.map((r) => r.filename), ['spill-02.jpg', 'spill-01.jpg', 'lot-snow-01.jpg', 'lot-morning-02.jpg']);

  const videos = JSON.parse((await call('images_workspace_search', { query: '*', mediaTypes: ['video'] })).text) as { results: unknown[] };
  t.ok(videos.results.length > 0);
  t.same(sim.requestsTo('workspace').at(-1)!.body, { query: '*', pageSize: 50, mediaTypes: ['video'] });
});

t.test('failures come back as tool errors carrying the hosted message', async (t) => {
  const { sim, call } = await session(t);
  const forbidden = await call('images_search', { project_id: 'rival/parking-lot' });
  t.equal(forbidden.isError, true);
  t.match(forbidden.text, /answered 403 .*This API key has no access to workspace rival\nHint: /);

  const missing = await call('images_search', { project_id: 'no-such-project' });
  t.match(missing.text, /answered 404 .*Project no-such-project not found/);

  sim.inject({ status: 503, times: 2, body: { error: 'index rebuilding', hint: 'Retry in 5 minutes.' } });
  const down = await call('images_workspace_search', { query: '*' });
  t.equal(down.isError, true);
  t.equal(down.text, 'Hosted search API answered 503 to POST /acme/search/v1: index rebuilding\nHint: Retry in 5 minutes.');

  const requestsBefore = sim.requests.length;
  const malformed = await call('images_workspace_search', { query: 'date>=2024-02-30' });
  t.equal(malformed.isError, true);
  t.match(malformed.text, /Invalid query at column 7: 2024-02-30 is not a calendar day\n {2}date>=2024-02-30\n {8}\^/);
  t.equal(sim.requests.length, requestsBefore, 'a malformed query is not sent');

  const zero = await call('images_workspace_search', { query: '*', page_size: 0 });
  t.equal(zero.isError, true);
  t.match(zero.text, /page_size/);
  t.equal(sim.requests.length, requestsBefore);
});

t.test('missing settings and a bad key are tool errors, with the key redacted', async (t) => {
  const sim = await SearchSimulator.start();
  t.teardown(() => sim.close());
  const keyless = await session(t, { SEARCH_BASE_URL: sim.baseUrl, SEARCH_WORKSPACE: WORKSPACE });
  const noKey = await keyless.call('images_workspace_search', { query: '*' });
  t.equal(noKey.isError, true);
  t.equal(noKey.text, 'No API key for the hosted search API\nHint: Pass -k/--api-key or set SEARCH_API_KEY.');

  const workspaceless = await session(t, { SEARCH_BASE_URL: sim.baseUrl, SEARCH_API_KEY: sim.apiKey });
  t.match((await workspaceless.call('images_search', { project_id: 'parking-lot' })).text, /No workspace selected/);
  const qualified = await workspaceless.call('images_search', { project_id: `${WORKSPACE}/parking-lot`, limit: 1 });
  t.equal(qualified.isError, false, 'workspace/slug needs no configured workspace');

  const wrong = await session(t, { SEARCH_BASE_URL: sim.baseUrl, SEARCH_API_KEY: 'leaky-key-5678', SEARCH_WORKSPACE: WORKSPACE });
  const denied = await wrong.call('images_workspace_search', { query: '*' });
  t.match(denied.text, /answered 401 .*Invalid api_key: \*\*\*/);
  t.notOk(denied.text.includes('leaky-key-5678'));
});

t.test('the commands register on a commander program', async (t) => {
  const program = new Command('edge-events');
  registerSearchCommand(program);
  registerMcpCommand(program);
  t.same(program.commands.map((command) => command.name()), ['search', 'mcp']);
  const mcp = program.commands[1];
  t.same(mcp.options.map((option) => option.long), ['--api-key', '--workspace', '--base-url', '--store', '--store-api-key']);
});
