/** test/list-bounds.test.ts again, on the node:http engine (docs/OPERATIONS.md, "HTTP engines"). */
process.env.HTTP_ENGINE = 'node';
await import('../list-bounds.test.js');
