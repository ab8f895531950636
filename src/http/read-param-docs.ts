/**
 * What /openapi.json says of the read routes' query parameters, from their one declaration
 * (src/events/read-params.ts; docs/API.md, "Query parameters").
 */
import { READ_PARAMS, ROUTE_PARAMS, type ReadRoute } from '../events/read-params.js';
import { queryParam, type OpenApiObject } from './route-docs.js';

/**
 * The OpenAPI parameter objects of `route`'s query parameters, in the order it declares them.
 * @param omit names left out (those a route documents otherwise)
 */
export function readParamDocs(route: ReadRoute, omit: readonly string[] = []): OpenApiObject[] {
  return ROUTE_PARAMS[route].filter((name) => !omit.includes(name)).map((name) => {
    const { schema, description, repeatable, required } = READ_PARAMS[name];
    return { ...queryParam(name, { ...schema }, description), required: required ?? false, ...(repeatable ? { style: 'form', explode: true } : {}) };
  });
}
