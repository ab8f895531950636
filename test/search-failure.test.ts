import t from 'tap';
import { QuerySyntaxError } from '../src/query-language/query-syntax-error.js';
import {
  SearchApiError, SearchArgumentError, SearchCredentialsError, SearchNetworkError,
  SearchResponseError, apiErrorFor,
} from '../src/search/errors.js';
import { describeFailure } from '../src/search/failure.js';
import { parseRetryAfter } from '../src/backoff.js';
import { retryDelay, retryPolicy } from '../src/search/retry.js';
import { redact } from '../src/redact.js';

t.test('every failure maps to its CLI exit code (docs/SEARCH.md, "The hosted API"), with a hint', async (t) => {
  const request = 'POST /acme/search/v1';
  const cases: [name: string, error: unknown, code: number, hint: RegExp][] = [
    ['malformed query', new QuerySyntaxError('tag:', 4, 'tag: needs a value'), 1, /Fix the query at the caret/],
    ['bad argument', new SearchArgumentError('limit must be an integer from 1 to 250'), 1, /--help/],
    ['missing key', new SearchCredentialsError('apiKey', 'No API key'), 2, /SEARCH_API_KEY/],
    ['no workspace', new SearchCredentialsError('workspace', 'No workspace'), 2, /SEARCH_WORKSPACE/],
    ['400', apiErrorFor(400, { error: 'query is required' }, request), 1, /rejected the request/],
    ['401', apiErrorFor(401, { error: 'Invalid key' }, request), 2, /Check the API key/],
    ['402', apiErrorFor(402, { error: { type: 'AccessException', message: 'Upgrade your plan' } }, request), 1, /plan/],
    ['403', apiErrorFor(403, 'Forbidden', request), 3, /no access/],
    ['404', apiErrorFor(404, { detail: 'Not Found' }, request), 3, /Check the workspace/],
    ['429 with Retry-After', apiErrorFor(429, 'Too Many Requests', request, 30), 1, /retry after 30 s/],
    ['429 without', apiErrorFor(429, '', request), 1, /wait and retry/],
    ['500', apiErrorFor(500, { message: 'boom' }, request), 1, /retry later/],
    ['hosted hint wins', apiErrorFor(503, { error: 'maintenance', hint: 'Back at 10:00 UTC.' }, request), 1, /^Back at 10:00 UTC\.$/],
    ['network', new SearchNetworkError('Could not reach'), 1, /--base-url/],
    ['unexpected answer', new SearchResponseError('not JSON'), 1, /base URL points at it/],
    ['anything else', new Error('EACCES: permission denied'), 1, /report it/],
    ['not even an Error', 'kaput', 1, /report it/],
  ];
  for (const [name, error, code, hint] of cases) {
    const failure = describeFailure(error);
    t.equal(failure.exitCode, code, `${name}: exit code`);
    t.match(failure.hint, hint, `${name}: hint`);
    t.equal(failure.message, error instanceof Error ? error.message : String(error), `${name}: message`);
  }
});

t.test('hosted error bodies: the message is found wherever the body puts it', async (t) => {
  const bodies: [unknown, string][] = [
    [{ error: 'plain string' }, 'plain string'],
    [{ error: { code: 'training_read_rate_limit_exceeded', message: 'Slow down' } }, 'Slow down'],
    [{ message: 'top-level message' }, 'top-level message'],
    [{ detail: 'FastAPI detail' }, 'FastAPI detail'],
    ['  text body  ', 'text body'],
    ['', 'HTTP 418'],
    [{ unrelated: true }, 'HTTP 418'],
    [null, 'HTTP 418'],
  ];
  for (const [body, message] of bodies) {
    const error = new SearchApiError(418, body, 'GET /x');
    t.equal(error.hostedMessage, message, JSON.stringify(body));
    t.equal(error.message, `Hosted search API answered 418 to GET /x: ${message}`);
  }
});

t.test('retry delays: capped exponential backoff with equal jitter, Retry-After as a floor', async (t) => {
  const policy = retryPolicy({ retries: 3, baseDelayMs: 100, maxDelayMs: 300, maxRetryAfterMs: 5000, random: () => 1 });
  t.same([0, 1, 2].map((attempt) => retryDelay(attempt, undefined, policy)), [100, 200, 300]);
  t.equal(retryDelay(3, undefined, policy), undefined, 'retries used up');
  t.equal(retryDelay(0, 4000, policy), 4000, 'Retry-After above the backoff');
  t.equal(retryDelay(0, 5001, policy), undefined, 'Retry-After beyond maxRetryAfterMs');
  const low = retryPolicy({ baseDelayMs: 100, random: () => 0 });
  t.equal(retryDelay(0, undefined, low), 50, 'half of the ceiling is fixed');
  t.same(retryPolicy(), { ...retryPolicy(), retries: 4, baseDelayMs: 500, maxDelayMs: 8000, maxRetryAfterMs: 60_000 });
});

t.test('Retry-After: seconds or an HTTP date', async (t) => {
  const now = Date.parse('2024-05-01T12:00:00Z');
  t.equal(parseRetryAfter('7', now), 7000);
  t.equal(parseRetryAfter('0.25', now), 250);
  t.equal(parseRetryAfter('Wed, 01 May 2024 12:00:30 GMT', now), 30_000);
  t.equal(parseRetryAfter('Wed, 01 May 2024 11:00:00 GMT', now), 0, 'a date in the past');
  t.equal(parseRetryAfter(null, now), undefined);
  t.equal(parseRetryAfter(' ', now), undefined);
  t.equal(parseRetryAfter('soon', now), undefined);
});

t.test('redaction masks api_key values and the bare key, raw or URL-encoded', async (t) => {
  const key = 'a/b+c=d';
  t.equal(redact(`GET /x?api_key=${encodeURIComponent(key)}&y=1`, key), 'GET /x?api_key=***&y=1');
  t.equal(redact(`echo ${key} and ${encodeURIComponent(key)}`, key), 'echo *** and ***');
  t.equal(redact('https://h/p?API_KEY=other', undefined), 'https://h/p?API_KEY=***');
});
