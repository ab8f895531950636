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
      name: 'the-store-has-one-entry-point',
      comment: 'The rest of src/ reaches the store through src/store/index.ts only, never into one of its rooms (docs/ARCHITECTURE.md, "The storage engine\'s rooms").',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/store/' },
      to: { path: '^src/store/', pathNot: '^src/store/index\\.ts$' },
    },
    {
      name: 'record-is-the-floor',
      comment: 'src/store/record (the record, its timestamps and ids, the change feed\'s shapes) imports no other room.',
      severity: 'error',
      from: { path: '^src/store/record/' },
      to: { path: '^src/store/(?!record/)' },
    },
    {
      name: 'log-knows-no-lmdb',
      comment: 'src/store/log (segments, frames, appends, staging, stored files) knows neither LMDB nor the rooms above it: the index records where the log\'s bytes are, never the reverse.',
      severity: 'error',
      from: { path: '^src/store/log/' },
      to: { path: ['(^|/)node_modules/lmdb/', '^src/store/(index|head|read|ledger|engine|block)/'] },
    },
    {
      name: 'blocks-stand-below-the-head',
      comment: 'src/store/block (block files: records and their postings, written once, read as a plan reads an index) uses the log\'s CRC and writes, the index\'s key shapes and cursors and the record, nothing of LMDB but its key type, and nothing of the head, the reader, the ledger or the engine.',
      severity: 'error',
      from: { path: '^src/store/block/' },
      to: { path: ['(^|/)node_modules/lmdb/', '^src/store/(head|read|ledger|engine)/'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'head-knows-no-files',
      comment: 'src/store/head (the head, a memtable of the creates and changes not yet checkpointed) reads and writes no file: no node:fs, and of the log only the shapes of what was appended.',
      severity: 'error',
      from: { path: '^src/store/head/' },
      to: { path: ['^(node:)?fs(/promises)?$', '^src/store/log/'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'only-the-engine-writes',
      comment: 'src/store/engine alone appends to the log, checkpoints the index, deletes, recovers and resets: no other room imports it, and only it holds the log\'s appender (blob-log.ts). The ledger moves the sinks\' cursors, its one write.',
      severity: 'error',
      from: { path: '^src/store/(?!engine/)[^/]+/' },
      to: { path: '^src/store/engine/' },
    },
    {
      name: 'only-the-engine-appends',
      comment: 'Only src/store/engine calls the log\'s appender (blob-log.ts); the head may name the shape of what was appended.',
      severity: 'error',
      from: { path: '^src/store/(?!engine/|log/)[^/]+/' },
      to: { path: '^src/store/log/blob-log\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'only-the-store-knows-lmdb',
      comment: 'LMDB is src/store\'s alone: no other folder imports the lmdb package.',
      severity: 'error',
      from: { pathNot: '^src/store/' },
      to: { path: '(^|/)node_modules/lmdb/' },
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
      name: 'nothing-imports-the-bench',
      comment: 'src/bench (edge-events bench and the durable floor) measures the store from outside: only the CLI (src/cli.ts) imports it, and the store never does.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/bench/', '^src/cli\\.ts$'] },
      to: { path: '^src/bench/' },
    },
    {
      name: 'the-bench-runs-the-store-as-a-process',
      comment: 'src/bench starts the installed store as a process and measures it through /proc: of src/ it uses the HTTP engine and body reader (the durable floor), the root modules, the store\'s kernel page size and free-space reading (src/store/index.ts) and the block device reader (src/operations/block-device.ts), nothing of the store\'s insides or the domain.',
      severity: 'error',
      from: { path: '^src/bench/' },
      to: { path: '^src/[^/]+/', pathNot: ['^src/(bench|http)/', '^src/store/index\\.ts$', '^src/operations/block-device\\.ts$'] },
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
