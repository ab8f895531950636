/**
 * What a route says of itself for the OpenAPI document (docs/API.md, "Routes"): each `Route` of
 * the route table carries a `RouteDoc`, and openapi.ts builds /openapi.json from the table, so
 * the document cannot list a route the server does not have, or miss one it has.
 *
 * A RouteDoc holds only what the route's own fields cannot tell: summary, parameters, bodies,
 * the answers of its handler, and the errors its handler throws, named by their registry code
 * (src/errors.ts; the status is the registry's). What the route table itself answers is derived
 * from the route: 401 unless `public`, 413 for a JSON body read by the table, 415 when a JSON
 * Content-Type is required, 529 when `gated`, and the path parameters from the pattern.
 */
import type { ErrorCode } from '../errors.js';

/** A fragment of an OpenAPI 3.1 document (a Parameter, Response or Request Body Object). */
export type OpenApiObject = Record<string, unknown>;

/** How an error reads on one route: a description, or one with the response headers it carries. */
export type ErrorDoc = string | { description: string; headers: OpenApiObject };

export interface RouteDoc {
  /** The group it is listed under in /docs (one of the document's tags). */
  tag: string;
  summary: string;
  /** Unique among all routes (OpenAPI `operationId`). */
  operationId: string;
  description?: string;
  /** Description of each path parameter, by name (`:event_id` -> `event_id`). */
  pathParams?: Record<string, string>;
  /** Query and header parameters (OpenAPI Parameter Objects), after the path parameters. */
  parameters?: OpenApiObject[];
  /** The request body (OpenAPI Request Body Object); see `jsonRequest`. */
  requestBody?: OpenApiObject;
  /** The answers that are not errors, by status (OpenAPI Response Objects); see `jsonResponse`. */
  responses: Record<number, OpenApiObject>;
  /**
   * The errors the handler answers, by registry code, with what each means on this route. Codes
   * of one status become one response, their descriptions joined.
   */
  errors?: Partial<Record<ErrorCode, ErrorDoc>>;
}

/** `#/components/schemas/<name>`: a component made from a file of `schemas/` (see openapi.ts). */
export const schemaRef = (name: string): OpenApiObject => ({ $ref: `#/components/schemas/${name}` });

/** A response whose JSON body is the component `schema`. */
export const jsonResponse = (schema: string, description: string): OpenApiObject => ({
  description,
  content: { 'application/json': { schema: schemaRef(schema) } },
});

/**
 * A required JSON request body, the component `schema`, with `example` when given (Swagger UI
 * builds its "Try it out" body from it instead of from every property of the schema).
 */
export const jsonRequest = (schema: string, example?: unknown): OpenApiObject => ({
  required: true,
  content: { 'application/json': { schema: schemaRef(schema), ...(example === undefined ? {} : { example }) } },
});

/** An optional query parameter. */
export const queryParam = (name: string, schema: OpenApiObject, description: string): OpenApiObject => ({
  name, in: 'query', required: false, description, schema,
});

/** `{ type: 'string' }`. */
export const STRING = { type: 'string' } as const;
