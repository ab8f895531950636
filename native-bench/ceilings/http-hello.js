/**
 * The HTTP ceiling: uWebSockets.js (the store's own build, refusing the JavaScript fallback as
 * the store does) answering POST /v2/events with 201 and a small JSON body once the request body
 * has fully arrived, and nothing else: no parsing, no storage. What the store does per small
 * event on top of this is its own cost.
 *
 *   PORT=18001 node ceilings/http-hello.js
 */
import uWS from 'uWebSockets.js';
import { assertNativeServer } from '../../dist/src/http/native-check.js';

assertNativeServer(uWS);
const ANSWER = '{"id":"00000000-0000-0000-0000-000000000000"}';
let served = 0;

uWS.App()
  .get('/health', (res) => res.end('{"status":"ok"}'))
  .post('/v2/events', (res) => {
    let aborted = false;
    let bytes = 0;
    res.onAborted(() => (aborted = true));
    res.onData((chunk, isLast) => {
      bytes += chunk.byteLength;
      if (!isLast || aborted) return;
      served += 1;
      res.cork(() => res.writeStatus('201 Created').writeHeader('Content-Type', 'application/json').end(ANSWER));
    });
  })
  .listen('127.0.0.1', Number(process.env.PORT), (token) => {
    if (!token) {
      console.error(`http-hello: cannot listen on port ${process.env.PORT}`);
      process.exit(1);
    }
  });

process.once('SIGTERM', () => {
  console.log(`http-hello: served ${served}`);
  process.exit(0);
});
