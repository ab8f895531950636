/**
 * The harnesses' ledger (scripts/lib/crash-ledger.ts): a snapshot keeps what was acknowledged at
 * its moment, whatever answers come later (the expectation of a power cut's copy), and tallies
 * add up.
 */
import t from 'tap';
import { addTally, emptyTally, Ledger, type SentEvent } from '../scripts/lib/crash-ledger.js';

function sent(ledger: Ledger, outcome: SentEvent['outcome']): SentEvent {
  const token = ledger.token('e');
  const event: SentEvent = {
    token,
    fields: { device_id: 'cam-0', workflow_id: 'wf-0', inference_timestamp: '2026-01-01T00:00:00Z', event_schema: 'custom', event_data: { value: 'v' }, custom_metadata: { token } },
    images: [{ fixture: 'cat.jpg', label: 'view-0', detections: [] }],
    draft: true,
    outcome,
    seen: false,
    finalize: 'none',
    seenFinalized: false,
    attachments: [],
  };
  ledger.add(event);
  return event;
}

t.test('a snapshot is not changed by later answers, new requests or audits', async (t) => {
  const ledger = new Ledger();
  const acked = sent(ledger, 'acked');
  const inFlight = sent(ledger, 'unknown');
  inFlight.attachments.push({ kind: 'video', label: 'up-0', payload: 'testsrc.mkv', outcome: 'unknown', seen: false });
  const snapshot = ledger.snapshot();

  inFlight.outcome = 'acked';
  inFlight.attachments[0].outcome = 'acked';
  acked.finalize = 'acked';
  sent(ledger, 'acked');

  t.equal(snapshot.events.size, 2);
  t.equal(snapshot.events.get(inFlight.token)!.outcome, 'unknown');
  t.equal(snapshot.events.get(inFlight.token)!.attachments[0].outcome, 'unknown');
  t.equal(snapshot.events.get(acked.token)!.finalize, 'none');
  t.same(snapshot.tally(), { ...emptyTally(), acked: 1, unknown: 1, files: 1 });

  snapshot.events.get(acked.token)!.seen = true;
  t.equal(acked.seen, false, 'an audit of the snapshot leaves the ledger as it was');
});

t.test('tallies add count by count, other counts of the total left alone', async (t) => {
  const total = { cuts: 3, ...emptyTally() };
  addTally(total, { ...emptyTally(), acked: 2, unknown: 1, unknownKept: 1, files: 4, finalized: 1, resets: 1, resetAway: 2 });
  addTally(total, { ...emptyTally(), acked: 1, refused: 2, files: 1, resets: 1, deletionsAcked: 3 });
  t.same(total, { cuts: 3, acked: 3, unknown: 1, unknownKept: 1, refused: 2, files: 5, finalized: 1, resets: 2, resetAway: 2, deletionsAcked: 3 });
});

t.test('an acknowledged reset removes what was stored before it was sent; what it overlapped may be gone', async (t) => {
  const ledger = new Ledger();
  const before = Object.assign(sent(ledger, 'acked'), { storedBy: ledger.now() });
  const refused = sent(ledger, 'refused');
  const sentAt = ledger.resetSent();
  const during = sent(ledger, 'unknown');
  const answeredDuring = Object.assign(sent(ledger, 'acked'), { storedBy: ledger.now() });
  const snapshot = ledger.snapshot();
  ledger.resetAnswered(sentAt, 'acked');

  t.equal(ledger.removed.get(before.token), 'reset');
  t.same([...ledger.events.keys()], [refused.token, during.token, answeredDuring.token]);
  t.same([during.mayBeReset, answeredDuring.mayBeReset, refused.mayBeReset], [true, true, undefined]);
  t.same(ledger.tally(), { ...emptyTally(), acked: 2, unknown: 1, refused: 1, files: 2, resets: 1, resetAway: 1 });
  t.equal(snapshot.removed.size, 0, 'a snapshot taken while the reset was unanswered keeps its events');
  t.equal(snapshot.events.get(before.token)!.mayBeReset, true, '... as possibly gone');

  const later = sent(ledger, 'acked');
  t.equal(later.mayBeReset, undefined, 'an event sent after the answer is not the reset\'s');
  t.equal(ledger.snapshot().removed.get(before.token), 'reset', 'a snapshot keeps the removals');
});

t.test('a refused reset leaves every event as it was; an unanswered one leaves them possibly gone', async (t) => {
  const ledger = new Ledger();
  const event = Object.assign(sent(ledger, 'acked'), { storedBy: ledger.now() });
  ledger.resetAnswered(ledger.resetSent(), 'refused');
  t.equal(event.mayBeReset, false);
  t.equal(ledger.removed.size, 0);
  ledger.resetAnswered(ledger.resetSent(), 'unknown');
  t.equal(event.mayBeReset, true);
  t.same([ledger.removed.size, ledger.tally().resets], [0, 0]);
});

t.test('an acknowledged deletion removes the event for good', async (t) => {
  const ledger = new Ledger();
  const event = sent(ledger, 'acked');
  ledger.deletionAcknowledged(event);
  t.notOk(ledger.events.has(event.token));
  t.same([ledger.removed.get(event.token), ledger.tally().deletionsAcked, ledger.tally().acked], ['deleted by cleanup', 1, 1]);
});
