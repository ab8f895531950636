/** test/end-to-end/stream-catch-up-memory.test.ts, one of the files `npm run test:engine` runs on each HTTP engine (docs/ARCHITECTURE.md, "Tests"). */
await import('../end-to-end/stream-catch-up-memory.test.js');
