/**
 * The response shapes of docs/API.md ("Response shapes"), as the JSON Schemas under
 * `schemas/responses/` give them, for tests to check what the store answers: the store itself
 * validates requests only (src/events/validate.ts), so these live with the tests.
 */
import type { Ajv2020, ValidateFunction } from 'ajv/dist/2020.js';
import { createAjv } from '../../src/events/schema-compiler.js';
import { loadSchemaFiles } from '../../src/events/schema-files.js';

/** Names of the files under `schemas/responses/` (without `.json`). */
export const RESPONSE_SCHEMA_NAMES = [
  'create-response',
  'stored-event',
  'event-list',
  'event-search-page',
  'count-stats',
  'attach-response',
  'finalize-response',
  'stats',
  'health',
  'cleanup-result',
  'reset-token',
  'reset-confirm',
  'error',
] as const;
export type ResponseSchemaName = (typeof RESPONSE_SCHEMA_NAMES)[number];

let responseAjv: Ajv2020 | undefined;

/**
 * The compiled validator (allErrors on) of a response shape (docs/API.md, "Response shapes"):
 * every listed field is required, nullable only where the shape allows null.
 */
export function responseValidator(name: ResponseSchemaName): ValidateFunction {
  responseAjv ??= createAjv({ allErrors: true });
  const validate = responseAjv.getSchema(String(loadSchemaFiles().get(`responses/${name}.json`)?.$id));
  if (!validate) throw new Error(`schemas/responses/${name}.json is missing`);
  return validate;
}

/**
 * Every way `data` misses the response shape `name`, as readable lines
 * (e.g. "/events/0 must have required property 'draft'"); empty when it conforms.
 */
export function responseProblems(name: ResponseSchemaName, data: unknown): string[] {
  const validate = responseValidator(name);
  if (validate(data)) return [];
  return validate.errors!.map((e) => `${e.instancePath || '/'} ${e.message}`);
}
