/** test/end-to-end/http-process.test.ts, one of the files `npm run test:engine` runs on each HTTP engine (docs/ARCHITECTURE.md, "Tests"). */
await import('../end-to-end/http-process.test.js');
