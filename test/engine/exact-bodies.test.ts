/** test/exact-bodies.test.ts, one of the files `npm run test:engine` runs on each HTTP engine (docs/ARCHITECTURE.md, "Tests"). */
await import('../exact-bodies.test.js');
