/** A free TCP port for a server a harness script or a test starts (test/support/waiting.ts re-exports it). */
import net from 'node:net';

/** A TCP port free on 127.0.0.1 now (the OS's choice; a server started on it soon takes it). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
