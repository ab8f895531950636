/**
 * The HTTP ceiling of an engine: answering POST /v2/events with 201 and a small JSON body once the
 * request body has fully arrived, and nothing else: no parsing, no storage. What the store does
 * per small event on top of this is its own cost.
 *
 *   PORT=18001 HTTP_ENGINE=uws node ceilings/http-hello.js    # the store's native uWebSockets.js build
 *   PORT=18001 HTTP_ENGINE=node node ceilings/http-hello.js   # node:http, the store's fallback engine
 *
 * uws loads the build the store would (its loader in ../dist, never a JavaScript fallback) and
 * fails when none loads.
 */
import http from 'node:http';
import { loadUws } from '../../dist/src/http/uws/uws-loader.js';

const ANSWER = '{"id":"00000000-0000-0000-0000-000000000000"}';
const PORT = Number(process.env.PORT);
const engine = process.env.HTTP_ENGINE ?? 'uws';
let served = 0;

function listenFailed() {
  console.error(`http-hello: cannot listen on port ${PORT}`);
  process.exit(1);
}

if (engine === 'node') {
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') return void res.end('{"status":"ok"}');
    if (req.method !== 'POST' || req.url !== '/v2/events') {
      res.statusCode = 404;
      return void res.end();
    }
    req.on('data', () => undefined);
    req.on('end', () => {
      served += 1;
      res.writeHead(201, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(ANSWER) });
      res.end(ANSWER);
    });
  });
  server.on('error', listenFailed);
  server.listen(PORT, '127.0.0.1');
} else {
  const { loaded, failures, choice } = loadUws();
  if (!loaded) {
    console.error(`http-hello: no native uWebSockets.js build loads: ${JSON.stringify({ passedOver: choice.passedOver.map((p) => p.reason), failures })}`);
    process.exit(1);
  }
  loaded.uws.App()
    .get('/health', (res) => res.end('{"status":"ok"}'))
    .post('/v2/events', (res) => {
      let aborted = false;
      res.onAborted(() => (aborted = true));
      res.onData((_chunk, isLast) => {
        if (!isLast || aborted) return;
        served += 1;
        res.cork(() => res.writeStatus('201 Created').writeHeader('Content-Type', 'application/json').end(ANSWER));
      });
    })
    .listen('127.0.0.1', PORT, (token) => {
      if (!token) listenFailed();
    });
}

process.once('SIGTERM', () => {
  console.log(`http-hello (${engine}): served ${served}`);
  process.exit(0);
});
