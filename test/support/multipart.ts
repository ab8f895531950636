/** Multipart requests for the attach routes: FormData with real bytes, and raw bodies. */
import net from 'node:net';
import { until } from './waiting.js';

/** POSTs a multipart form with `file` (bytes, name, declared type) and extra text fields. */
export async function postFile(url: string, file: Buffer | null, fields: Record<string, string> = {}, declaredType = 'video/mp4', headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const form = new FormData();
  if (file) form.append('file', new Blob([new Uint8Array(file)], { type: declaredType }), 'upload.bin');
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  const res = await fetch(url, { method: 'POST', body: form, headers });
  return { status: res.status, body: await res.json() };
}

/** POSTs a raw body with a given content type (for malformed multipart). */
export async function postRaw(url: string, body: string | Buffer, contentType: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { method: 'POST', body: typeof body === 'string' ? body : new Uint8Array(body), headers: { 'content-type': contentType } });
  return { status: res.status, body: await res.json() };
}

/**
 * Sends the start of a large multipart upload over a raw socket, then disconnects once
 * `underWay` holds (e.g. the store's staging file exists), so the hang-up lands mid-upload.
 * @param sendBytes how many bytes of the file part to send before hanging up
 */
export function abortedUpload(baseUrl: string, path: string, head: Buffer, sendBytes: number, underWay: () => boolean | Promise<boolean>): Promise<void> {
  const { port } = new URL(baseUrl);
  const boundary = 'edge-test-boundary';
  const preamble = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="clip.mp4"\r\nContent-Type: video/mp4\r\n\r\n`;
  const declaredLength = preamble.length + 100 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${declaredLength}\r\n\r\n${preamble}`);
      socket.write(head);
      socket.write(Buffer.alloc(sendBytes - head.length, 7), () => {
        until('the upload under way', underWay).then(() => {
          socket.destroy();
          resolve();
        }, (err: Error) => (socket.destroy(), reject(err)));
      });
    });
    socket.on('error', reject);
  });
}
