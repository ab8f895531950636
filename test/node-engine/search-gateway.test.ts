/** test/search-gateway.test.ts again, on the node:http engine (docs/OPERATIONS.md, "HTTP engines"). */
process.env.HTTP_ENGINE = 'node';
await import('../search-gateway.test.js');
