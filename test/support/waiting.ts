/** Waiting in tests: a free port for a server the test starts, and polling until a condition holds. */
import net from 'node:net';

/** A TCP port free on 127.0.0.1 now (the OS's choice; a server started on it soon takes it). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Polls `condition` every `everyMs` until it holds.
 * @throws Error naming `what` after `timeoutMs`
 */
export async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 30_000, everyMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
