/** test/early-answer.test.ts again, on the node:http engine (docs/OPERATIONS.md, "HTTP engines"). */
process.env.HTTP_ENGINE = 'node';
await import('../early-answer.test.js');
