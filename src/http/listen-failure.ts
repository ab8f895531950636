/**
 * Why the store could not listen, in words that name the cause and a fix (docs/OPERATIONS.md,
 * "Start-up errors"). uWebSockets.js reports a failed listen without an errno, so the cause is
 * asked of a `node:net` listen on the same address.
 */
import net from 'node:net';

/** Binds `host:port` exclusively and releases it; resolves with the bind's error, or undefined. */
function probe(host: string, port: number): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err) => resolve(err as NodeJS.ErrnoException));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/**
 * The error to report for a listen on `host:port` that failed.
 * @param cause the engine's error, when it gave one with an errno (node:http does; uWebSockets.js
 *   does not, and the cause is then probed)
 * @returns an Error whose message names the cause (the port in use, a privileged port, an address
 *   not on this machine) and what to change, keeping the errno's error as `cause`
 */
export async function listenFailure(host: string, port: number, cause?: NodeJS.ErrnoException): Promise<Error> {
  const err = cause?.code ? cause : await probe(host, port);
  const at = `cannot listen on ${host}:${port}`;
  if (!err) return new Error(`${at}: the HTTP engine refused it, and a plain listen on the same address works (a firewall, or another process that took the port meanwhile?)`);
  switch (err.code) {
    case 'EADDRINUSE':
      return new Error(`${at}: the port is in use by another process (see which: ss -ltnp 'sport = :${port}'); stop it, or set PORT to a free port`, { cause: err });
    case 'EACCES':
    case 'EPERM':
      return new Error(`${at}: ports below 1024 need root or the CAP_NET_BIND_SERVICE capability; set PORT to 1024 or above (the default is 8001), or grant the capability (AmbientCapabilities=CAP_NET_BIND_SERVICE in the systemd unit)`, { cause: err });
    case 'EADDRNOTAVAIL':
      return new Error(`${at}: ${host} is not an address of this machine; set HOST to one of its addresses, 127.0.0.1, or 0.0.0.0 for all`, { cause: err });
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new Error(`${at}: the name ${host} does not resolve; set HOST to an address`, { cause: err });
    default:
      return new Error(`${at}: ${err.message}`, { cause: err });
  }
}
