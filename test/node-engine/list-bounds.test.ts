/** test/list-bounds.test.ts again, on the node:http engine (README, "HTTP engines"). */
process.env.HTTP_ENGINE = 'node';
await import('../list-bounds.test.js');
