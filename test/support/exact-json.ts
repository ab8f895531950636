/**
 * JSON bodies read whole and checked to the byte: a body that parses but is longer than its JSON
 * (padding, a stray tail) or whose Content-Length disagrees with what arrived is an error. The
 * store writes compact JSON (`JSON.stringify`), so a body's bytes are exactly those of its parsed
 * value written again. This caught lists and searches padded to 16 MiB with NUL bytes on Node 24
 * (docs/STORAGE.md, "Reading values without a copy").
 */

/**
 * Parses `bytes` as compact JSON and checks there is nothing else.
 * @param what names the body in the error, e.g. `GET /v2/events`
 * @returns the parsed value
 * @throws Error when the bytes hold a NUL, do not parse, or are not exactly the value's JSON
 */
export function exactJson(bytes: Uint8Array, what: string): any {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  const nul = text.indexOf('\0');
  if (nul >= 0) throw new Error(`${what}: a NUL byte at ${nul} of ${bytes.byteLength} bytes`);
  const value = JSON.parse(text);
  const expected = Buffer.byteLength(JSON.stringify(value));
  if (expected !== bytes.byteLength) throw new Error(`${what}: ${bytes.byteLength} bytes for ${expected} bytes of JSON`);
  return value;
}

/**
 * Reads a response's whole body as exact JSON (see `exactJson`), and checks its Content-Length
 * (when it has one) against the bytes that arrived.
 * @returns the parsed value, or undefined for an empty body
 * @throws Error as `exactJson`, or when Content-Length disagrees with the body
 */
export async function exactJsonBody(res: Response, what = res.url): Promise<any> {
  const bytes = new Uint8Array(await res.arrayBuffer());
  const declared = res.headers.get('content-length');
  if (declared !== null && Number(declared) !== bytes.byteLength) throw new Error(`${what}: Content-Length ${declared}, ${bytes.byteLength} bytes arrived`);
  return bytes.byteLength === 0 ? undefined : exactJson(bytes, what);
}
