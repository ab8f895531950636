/**
 * The record checker's worker (record-checker.ts): decodes a large stored record and tells
 * whether it passes a list's or a search's conditions, off the HTTP thread.
 */
import { parentPort } from 'node:worker_threads';
import { errorReport } from '../../errors.js';
import { decodeRecord } from '../index/record-codec.js';
import { matchesQuery, type EventQuery } from './event-query.js';
import { matchesCondition, type SearchCondition } from './event-search.js';
import type { CheckedMessage, CheckMessage } from './record-checker.js';

const port = parentPort!;

port.on('message', ({ id, record, check }: CheckMessage) => {
  try {
    const decoded = decodeRecord(record);
    const matches = check.kind === 'query' ? matchesQuery(decoded, check.query as EventQuery) : matchesCondition(decoded, check.condition as SearchCondition);
    port.postMessage({ id, matches } satisfies CheckedMessage);
  } catch (err) {
    port.postMessage({ id, error: errorReport(err) } satisfies CheckedMessage);
  }
});
