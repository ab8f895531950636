// The layer rules of docs/ARCHITECTURE.md, "Layers", checked by dependency-cruiser on every `npm test`
// (`npm run lint`). Each rule names the row of the layers table it encodes. Type-only imports count
// like any other, except where a rule says otherwise. Rule reference:
// https://github.com/sverweij/dependency-cruiser/blob/main/doc/rules-reference.md

/** The folders of src/ below src/http: none of them knows HTTP. */
const BELOW_HTTP = ['events', 'store', 'operations', 'lifecycle', 'stream', 'sinks', 'hub', 'query-language', 'search', 'client', 'export', 'mcp', 'check'];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-folder-cycles',
      comment: 'No two folders of src/ import each other, directly or through others: move the shared piece to the folder that owns it.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-module-cycles',
      comment: 'No file imports itself through others.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'store-is-the-bottom',
      comment: 'src/store knows nothing of HTTP, src/events and the API\'s types, the sinks, the lifecycle, or any other folder of src/ (it may use the error registry and the root modules).',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { path: '^src/(?!store/)[^/]+/' },
    },
    {
      name: 'http-reaches-the-store-through-the-domain',
      comment: 'src/http calls no code of src/store: it goes through src/events. It may name the types of the store handle it passes on (EventStore) and of the files it streams (StoredFile, StagingFile).',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/store/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'only-the-store-knows-lmdb',
      comment: 'LMDB is src/store\'s alone: no other folder imports the lmdb package.',
      severity: 'error',
      from: { pathNot: '^src/store/' },
      to: { path: '(^|/)node_modules/lmdb/' },
    },
    {
      name: 'only-the-store-opens-its-databases',
      comment: 'No other folder calls src/store/lmdb-env.ts, where the store opens and reads its LMDB databases; the plain types of what the store returns (Counters) may be named.',
      severity: 'error',
      from: { pathNot: '^src/store/' },
      to: { path: '^src/store/lmdb-env\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'lower-layers-know-no-http',
      comment: 'Only src/http, the start-up (serve.ts, cli.ts) and src/supervision know src/http; every other folder is below it.',
      severity: 'error',
      from: { path: `^src/(${BELOW_HTTP.join('|')})/` },
      to: { path: '^src/http/' },
    },
    {
      name: 'clients-know-not-the-store-insides',
      comment: 'The hosted search client, the store client, the MCP server and the CLIs reach a store over HTTP only.',
      severity: 'error',
      from: { path: '^src/(search|client|mcp)/' },
      to: { path: '^src/store/' },
    },
    {
      name: 'query-language-stands-alone',
      comment: 'src/query-language, the grammar both searches share, imports nothing of src/: the hosted client and the event search each build on it.',
      severity: 'error',
      from: { path: '^src/query-language/' },
      to: { path: '^src/(?!query-language/)' },
    },
    {
      name: 'the-domain-knows-not-the-hosted-client',
      comment: 'The event domain, the store, the store client and the rest below HTTP reach the query language in src/query-language, never the hosted search client in src/search (only the gateway routes, the MCP server and the CLIs use it).',
      severity: 'error',
      from: { path: '^src/(events|store|client|operations|lifecycle|stream|sinks|hub|query-language)/' },
      to: { path: '^src/search/' },
    },
    {
      name: 'registry-and-backoff-stand-alone',
      comment: 'The error registry and the backoff arithmetic import nothing of src/ (backoff.ts knows nothing of who retries).',
      severity: 'error',
      from: { path: '^src/(errors|backoff)\\.ts$' },
      to: { path: '^src/' },
    },
    {
      name: 'scripts-never-import-tests',
      comment: 'scripts/lib/ is the harness code both use; scripts never import from test/.',
      severity: 'error',
      from: { path: '^scripts/' },
      to: { path: '^test/' },
    },
    {
      name: 'page-knows-only-the-http-api',
      comment: 'The operator page runs in the browser and knows the store by its HTTP API only.',
      severity: 'error',
      from: { path: '^page/' },
      to: { path: '^(src|scripts|test)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.test.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
    skipAnalysisNotInRules: true,
  },
};
