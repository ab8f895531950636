/** X-API-Key authentication (docs/API.md, "Authentication"): when API_KEY is set, every route but the public ones (/health, /docs and its assets, /openapi.json, the operator page and its files). */
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/**
 * A checker comparing a presented key with `apiKey` in constant time (both sides are hashed
 * first, so neither the content nor the length of the key leaks through timing).
 * @returns a function answering true when the presented key is accepted; always true when
 *   `apiKey` is undefined (authentication off)
 */
export function createKeyChecker(apiKey: string | undefined): (presented: string) => boolean {
  if (apiKey === undefined) return () => true;
  const expected = digest(apiKey);
  return (presented) => presented !== '' && timingSafeEqual(digest(presented), expected);
}
