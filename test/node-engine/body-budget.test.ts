/** test/body-budget.test.ts again, on the node:http engine (docs/OPERATIONS.md, "HTTP engines"). */
process.env.HTTP_ENGINE = 'node';
await import('../body-budget.test.js');
