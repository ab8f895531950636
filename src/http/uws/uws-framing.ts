/**
 * Request framing that RFC 9112 (section 6) says to refuse and uWebSockets.js's parser accepts
 * (docs/RELIABILITY.md, "Security"): it takes the first of several `Content-Length` headers and
 * decodes any `Transfer-Encoding` as chunked. A request whose length two parsers could read
 * differently is refused before routing, and its connection closed; so is one with more than one
 * Host (RFC 9112, 3.2), whose first alone uWebSockets.js would give.
 */
import { AppError } from '../../errors.js';
import type { UwsRequest } from './uws-api.js';

/**
 * The framing error of `req`, or undefined when its length is unambiguous.
 * @returns AppError ambiguous_length (400) for more than one Content-Length (also as a list,
 *   `5, 5`); transfer_coding_unsupported (501) for a Transfer-Encoding other than `chunked`;
 *   malformed_host (400) for more than one Host
 */
export function framingProblem(req: UwsRequest): AppError | undefined {
  let lengths = 0;
  let coding: string | undefined;
  let codings = 0;
  let hosts = 0;
  req.forEach((name, value) => {
    if (name === 'content-length') lengths += value.split(',').length;
    else if (name === 'host') hosts++;
    else if (name === 'transfer-encoding') {
      coding = value;
      codings++;
    }
  });
  if (lengths > 1) return new AppError('ambiguous_length');
  if (hosts > 1) return new AppError('malformed_host', 'The request has more than one Host');
  if (codings > 1 || (coding !== undefined && coding.trim().toLowerCase() !== 'chunked')) {
    return new AppError('transfer_coding_unsupported', `Transfer-Encoding ${JSON.stringify(coding)} is not supported: send chunked, or a Content-Length`);
  }
  return undefined;
}
