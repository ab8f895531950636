/**
 * Human-mode rendering of stored events for `edge-events events`: one line per event with its
 * time, device, schema and the classes its images predict (with counts), and its id. Every cell
 * comes from the store, so its control characters are shown as escapes (src/terminal-text.ts).
 */
import type { StoredEvent } from '../events/types.js';
import { visibleControls } from '../terminal-text.js';

const MAX_CELL = 48;

/** `person×2, car`: the classes of every prediction of the event's images, most frequent first. */
export function classSummary(event: StoredEvent): string {
  const counts = new Map<string, number>();
  for (const image of event.images) {
    for (const prediction of [...image.object_detections, ...image.classifications, ...image.instance_segmentations, ...image.keypoints]) {
      counts.set(prediction.class, (counts.get(prediction.class) ?? 0) + 1);
    }
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([name, n]) => (n === 1 ? name : `${name}×${n}`)).join(', ');
}

/**
 * Renders `events` as a table (TIME in UTC, DEVICE, SCHEMA, CLASSES, ID), columns padded to the
 * widest cell, control characters shown as escapes (`\x1b`; docs/SECURITY.md, "A store or search
 * server the CLI talks to"), cells past 48 characters then cut with an ellipsis. Ends with a newline.
 */
export function renderEventTable(events: StoredEvent[]): string {
  const header = ['TIME (UTC)', 'DEVICE', 'SCHEMA', 'CLASSES', 'ID'];
  const rows = events.map((event) => [
    event.created_at.slice(0, 19).replace('T', ' '),
    event.device_id ?? '',
    event.event_schema,
    classSummary(event),
    event.id,
  ].map(clip));
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

function clip(raw: string): string {
  const text = visibleControls(raw);
  return text.length > MAX_CELL ? `${text.slice(0, MAX_CELL - 1)}…` : text;
}
