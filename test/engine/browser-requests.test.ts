/** test/browser-requests.test.ts, one of the files `npm run test:engine` runs on each HTTP engine (docs/ARCHITECTURE.md, "Tests"). */
await import('../browser-requests.test.js');
