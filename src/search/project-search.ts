/**
 * Project search, `POST /:workspace/:project/search` (docs/SEARCH.md, "The hosted API"): one page,
 * and an async generator over every page with offset paging.
 */
import { SearchArgumentError, SearchResponseError } from './errors.js';
import { validateProjectSearchBody } from './request-validation.js';
import type { HostedTransport } from './transport.js';
import { SDK_PROJECT_LIMIT } from './types.js';
import type { ProjectSearchBody, ProjectSearchParams, ProjectSearchResponse, ProjectSearchResult } from './types.js';

/** Workspace and project slugs of a project reference. */
export interface ProjectRef {
  workspace: string;
  project: string;
}

/**
 * Resolves a project reference: a slug (`parking-lot`, in `defaultWorkspace`) or `ws/slug`.
 * @throws SearchArgumentError for an empty or malformed reference, or a bare slug with no
 *   default workspace
 */
export function resolveProjectRef(ref: string, defaultWorkspace: string | undefined): ProjectRef {
  const match = /^(?:([^/\s]+)\/)?([^/\s]+)$/.exec(ref.trim());
  if (!match) throw new SearchArgumentError(`Project must be a slug or workspace/slug, got ${JSON.stringify(ref)}`);
  const workspace = match[1] ?? defaultWorkspace;
  if (workspace === undefined) {
    throw new SearchArgumentError(`Project ${JSON.stringify(ref)} names no workspace: pass workspace/slug or configure a workspace`);
  }
  return { workspace, project: match[2] };
}

/** Maps camelCase parameters to the snake_case wire body; `limit` defaults to 100, as the public SDK's. */
export function toProjectSearchBody(params: ProjectSearchParams): ProjectSearchBody {
  const body: ProjectSearchBody = {
    prompt: params.prompt,
    like_image: params.likeImage,
    tag: params.tag,
    class_name: params.className,
    in_dataset: params.inDataset,
    batch: params.batch,
    batch_id: params.batchId,
    annotation_job: params.annotationJob,
    annotation_job_id: params.annotationJobId,
    offset: params.offset ?? 0,
    limit: params.limit ?? SDK_PROJECT_LIMIT,
    mediaTypes: params.mediaTypes,
    fields: params.fields,
  };
  return Object.fromEntries(Object.entries(body).filter(([, value]) => value !== undefined)) as ProjectSearchBody;
}

/**
 * Fetches one page of project search.
 * @throws SearchArgumentError for invalid parameters (nothing sent); the transport's errors
 *   for hosted failures; SearchResponseError when the answer lacks `results` or `total`
 */
export async function searchProject(transport: HostedTransport, ref: ProjectRef, params: ProjectSearchParams): Promise<ProjectSearchResponse> {
  const body = toProjectSearchBody(params);
  validateProjectSearchBody(body);
  const path = `/${encodeURIComponent(ref.workspace)}/${encodeURIComponent(ref.project)}/search`;
  const answer = (await transport.json('POST', path, body)) as Partial<ProjectSearchResponse> | null;
  if (!Array.isArray(answer?.results) || typeof answer.total !== 'number') {
    throw new SearchResponseError(`Project search answer lacks results or total (POST ${path})`);
  }
  return { offset: typeof answer.offset === 'number' ? answer.offset : body.offset ?? 0, total: answer.total, results: answer.results };
}

/**
 * Yields every page of a project search, advancing `offset` by `limit` from `params.offset`.
 * Stops after a short page (fewer than `limit` results). Offset paging over a changing set can
 * repeat results, so an id already yielded is dropped; a page left empty by that is skipped.
 * @throws as `searchProject`
 */
export async function* searchProjectAll(transport: HostedTransport, ref: ProjectRef, params: ProjectSearchParams): AsyncGenerator<ProjectSearchResult[]> {
  const limit = params.limit ?? SDK_PROJECT_LIMIT;
  const seen = new Set<string>();
  for (let offset = params.offset ?? 0; ; offset += limit) {
    const page = await searchProject(transport, ref, { ...params, offset, limit });
    const fresh = page.results.filter((result) => !seen.has(result.id));
    for (const result of fresh) seen.add(result.id);
    if (fresh.length > 0) yield fresh;
    if (page.results.length < limit) return;
  }
}
