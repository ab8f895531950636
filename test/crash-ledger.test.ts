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
  t.same(snapshot.tally(), { acked: 1, unknown: 1, unknownKept: 0, refused: 0, files: 1, finalized: 0 });

  snapshot.events.get(acked.token)!.seen = true;
  t.equal(acked.seen, false, 'an audit of the snapshot leaves the ledger as it was');
});

t.test('tallies add count by count, other counts of the total left alone', async (t) => {
  const total = { cuts: 3, ...emptyTally() };
  addTally(total, { acked: 2, unknown: 1, unknownKept: 1, refused: 0, files: 4, finalized: 1 });
  addTally(total, { acked: 1, unknown: 0, unknownKept: 0, refused: 2, files: 1, finalized: 0 });
  t.same(total, { cuts: 3, acked: 3, unknown: 1, unknownKept: 1, refused: 2, files: 5, finalized: 1 });
});
