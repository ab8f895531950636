/** test/browser-requests.test.ts again, on the node:http engine (README, "HTTP engines"). */
process.env.HTTP_ENGINE = 'node';
await import('../browser-requests.test.js');
