/**
 * Human-mode rendering of workspace search results: a plain-text table with one row per image
 * and only the columns some result has data for. Every cell comes from the hosted API, so its
 * control characters are shown as escapes (src/terminal-text.ts).
 */
import { visibleControls } from '../terminal-text.js';
import type { WorkspaceSearchImage } from './types.js';

interface Column {
  header: string;
  cell: (image: WorkspaceSearchImage) => string;
}

const MAX_CELL = 48;

const COLUMNS: Column[] = [
  { header: 'ID', cell: (image) => image.id },
  { header: 'TYPE', cell: (image) => (image.mediaType === 'video' ? 'video' : '') },
  { header: 'FILENAME', cell: (image) => image.filename ?? '' },
  { header: 'SIZE', cell: (image) => (image.width !== undefined && image.height !== undefined ? `${image.width}x${image.height}` : '') },
  { header: 'PROJECTS', cell: (image) => Object.keys(image.projectData ?? {}).join(', ') },
  { header: 'SPLIT', cell: (image) => unique(Object.values(image.projectData ?? {}).map((data) => data.split)).join(', ') },
  { header: 'CLASSES', cell: (image) => unique(Object.values(image.projectData ?? {}).flatMap((data) => data.annotations?.classes ?? [])).join(', ') },
  { header: 'TAGS', cell: (image) => (image.tags ?? []).join(', ') },
  { header: 'OWNER', cell: (image) => image.owner ?? '' },
  { header: 'URL', cell: (image) => image.url ?? '' },
];

/**
 * Renders `results` as a table: a header line, then one line per image; columns padded to the
 * widest cell, control characters shown as escapes (`\x1b`; docs/SECURITY.md, "A store or search
 * server the CLI talks to"), cells longer than 48 characters then cut with an ellipsis. Ends with
 * a newline.
 */
export function renderResultTable(results: WorkspaceSearchImage[]): string {
  const columns = COLUMNS.filter((column) => column.header === 'ID' || results.some((image) => column.cell(image) !== ''));
  const rows = results.map((image) => columns.map((column) => clip(column.cell(image))));
  const widths = columns.map((column, index) => Math.max(column.header.length, ...rows.map((row) => row[index].length)));
  const line = (cells: string[]): string => cells.map((cell, index) => cell.padEnd(widths[index])).join('  ').trimEnd();
  return [line(columns.map((column) => column.header)), ...rows.map(line)].join('\n') + '\n';
}

function unique(values: (string | undefined)[]): string[] {
  return [...new Set(values.filter((value): value is string => value !== undefined && value !== ''))];
}

function clip(raw: string): string {
  const text = visibleControls(raw);
  return text.length > MAX_CELL ? `${text.slice(0, MAX_CELL - 1)}…` : text;
}
