/** test/stream-catch-up-memory.test.ts again, on the node:http engine (docs/OPERATIONS.md, "HTTP engines"). */
process.env.HTTP_ENGINE = 'node';
await import('../stream-catch-up-memory.test.js');
