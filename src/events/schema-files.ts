/**
 * The JSON Schemas under `schemas/` (draft 2020-12, the dialect of OpenAPI 3.1): the single source
 * of the create body's rules (docs/API.md, "Create an event", "Event schemas") and of the
 * response shapes. `src/events/schema-compiler.ts` compiles them, `src/http/openapi.ts` publishes
 * them.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AnySchemaObject } from 'ajv/dist/2020.js';
import { schemasDir } from '../paths.js';

let schemaFiles: ReadonlyMap<string, AnySchemaObject> | undefined;

/**
 * Every JSON Schema under `schemas/`, keyed by its path relative to that folder with `/`
 * separators (`create-event.json`, `event-data/custom.json`, `responses/stats.json`, ...).
 * Read once and cached; each schema carries an absolute `$id` and may `$ref` the others by
 * relative URI.
 * @throws SyntaxError if a file is not valid JSON
 */
export function loadSchemaFiles(): ReadonlyMap<string, AnySchemaObject> {
  if (schemaFiles) return schemaFiles;
  const files = new Map<string, AnySchemaObject>();
  const walk = (dir: string, prefix: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const rel = prefix + entry.name;
      if (entry.isDirectory()) walk(path.join(dir, entry.name), rel + '/');
      else if (entry.name.endsWith('.json')) files.set(rel, JSON.parse(fs.readFileSync(path.join(dir, entry.name), 'utf8')));
    }
  };
  walk(schemasDir, '');
  schemaFiles = files;
  return files;
}
