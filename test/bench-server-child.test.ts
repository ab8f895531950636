/**
 * A server `edge-events bench` measures, started as a process of its own (src/bench/server-child.ts):
 * one that logs its listening line and then exits, as the bench's servers do when a run is stopped
 * while they start (bench-free-space.test.ts in test/end-to-end/), is reported as exited once it
 * has, instead of GET /health being tried at full speed until the start limit (60 s).
 */
import t from 'tap';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { startServerChild } from '../src/bench/server-child.js';

t.test('a server that exits after its listening line is reported as exited, with its output', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-server-child-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  // A port the kernel gave and took back: nothing listens there, so each GET /health is refused.
  const closed = net.createServer().listen(0, '127.0.0.1');
  await once(closed, 'listening');
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const script = path.join(dir, 'server.mjs');
  fs.writeFileSync(script, `console.log(JSON.stringify({ msg: 'test server listening', port: ${port}, httpEngine: 'node' }));\nconsole.error('going away');\nprocess.exit(3);\n`);
  const adopted: number[] = [];
  await t.rejects(startServerChild('the test server', script, [], process.env, (server) => adopted.push(server.pid)), /^the test server exited \(code 3, signal null\) before GET \/health answered 200 \(last: .+\):\n[^]*going away/);
  t.equal(adopted.length, 1, 'the server was handed over as soon as it existed');
});
