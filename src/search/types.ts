/**
 * Request and response types of the hosted search API (docs/SEARCH.md, "The hosted API").
 * Client-side parameters are camelCase; the `*Body` types are the snake_case wire bodies.
 */
import type { ProgressStream } from './download-progress.js';

/** Media types a search may return (`mediaTypes`, default `[image]`). */
export const MEDIA_TYPES = ['image', 'video'] as const;
export type MediaType = (typeof MEDIA_TYPES)[number];

/** `fields` allowed on project search (default `[id, created]`). */
export const PROJECT_SEARCH_FIELDS = ['id', 'name', 'annotations', 'labels', 'split', 'tags', 'owner', 'url', 'embedding', 'created'] as const;
export type ProjectSearchField = (typeof PROJECT_SEARCH_FIELDS)[number];

/** `fields` allowed on workspace search. */
export const WORKSPACE_SEARCH_FIELDS = ['tags', 'width', 'height', 'filename', 'aspectRatio', 'split', 'projects', 'annotations', 'labels', 'owner', 'url'] as const;
export type WorkspaceSearchField = (typeof WORKSPACE_SEARCH_FIELDS)[number];

/**
 * Largest `limit` of project search (docs/API.md, "Search gateway"). Workspace `pageSize` has no
 * stated maximum: the hosted API decides.
 */
export const MAX_PAGE_SIZE = 250;
/** The hosted API's default `limit` / `pageSize`. */
export const DEFAULT_PAGE_SIZE = 50;
/** The SDK's default project search `limit` (`search`, `searchAll`), as the public SDK's. */
export const SDK_PROJECT_LIMIT = 100;

/** Parameters of one project search page; modes combine (docs/SEARCH.md, "SDK"). */
export interface ProjectSearchParams {
  /** Semantic text search; results sorted by similarity. */
  prompt?: string;
  /** Image id; results sorted by similarity to it. */
  likeImage?: string;
  tag?: string;
  className?: string;
  /** True: only images in the project's dataset (not in batch or annotation-job staging). */
  inDataset?: boolean;
  /** Only images in any batch. */
  batch?: boolean;
  batchId?: string;
  /** Only images in any annotation job. */
  annotationJob?: boolean;
  annotationJobId?: string;
  /** Default 0. */
  offset?: number;
  /** 1..250, default 100 (the SDK's default). */
  limit?: number;
  mediaTypes?: MediaType[];
  fields?: ProjectSearchField[];
}

/** The wire body of `POST /:workspace/:project/search`. */
export interface ProjectSearchBody {
  prompt?: string;
  like_image?: string;
  tag?: string;
  class_name?: string;
  in_dataset?: boolean;
  batch?: boolean;
  batch_id?: string;
  annotation_job?: boolean;
  annotation_job_id?: string;
  offset?: number;
  limit?: number;
  mediaTypes?: MediaType[];
  fields?: string[];
}

/** One project search result; which members are present depends on `fields`. */
export interface ProjectSearchResult {
  id: string;
  mediaType: MediaType;
  name?: string;
  owner?: string;
  /** For a video: its poster image. */
  url?: string;
  /** For a video when `url` is requested: a short-lived download link. */
  videoUrl?: string;
  created?: unknown;
  split?: unknown;
  tags?: string[];
  labels?: unknown[];
  annotations?: { count: number; classes: Record<string, number> };
  embedding?: unknown;
}

export interface ProjectSearchResponse {
  offset: number;
  total: number;
  results: ProjectSearchResult[];
}

/** Parameters (and wire body) of `POST /:workspace/search/v1`. */
export interface WorkspaceSearchParams {
  /** Required, non-empty; the query language of `src/query-language/query-parser.ts`. */
  query: string;
  /** 1 or more, default 50; the hosted API sets the maximum. */
  pageSize?: number;
  fields?: WorkspaceSearchField[];
  mediaTypes?: MediaType[];
  /** Token of the previous page; fetches the next page of the same query. */
  continuationToken?: string;
}

/** Per-project data of a workspace search image, keyed by project URL. */
export interface WorkspaceProjectData {
  split?: string;
  inDataset?: boolean;
  annotations?: { annotationGroup?: string; classes?: string[]; classCounts?: Record<string, number> };
  labels?: unknown;
}

/** One workspace search image; which members are present depends on `fields`. */
export interface WorkspaceSearchImage {
  id: string;
  mediaType?: MediaType;
  projectData?: Record<string, WorkspaceProjectData>;
  tags?: string[];
  width?: number;
  height?: number;
  filename?: string;
  aspectRatio?: number;
  owner?: string;
  url?: string;
  videoUrl?: string;
}

export interface WorkspaceSearchResponse {
  results: WorkspaceSearchImage[];
  total: number;
  /** Absent or null on the last page. */
  continuationToken?: string | null;
}

/** Parameters of `searchExport` (docs/SEARCH.md, "SDK" and "The hosted API"). */
export interface SearchExportParams {
  /** The query whose results are exported. */
  query: string;
  /** Dataset format, e.g. `coco` (default), `yolo`, `voc`. */
  format?: string;
  /** Directory receiving the zip (created if missing); default `./search-export-<format>`. */
  location?: string;
  /** Limit the export to this project (slug). Not together with `annotationGroup`. */
  dataset?: string;
  /** Export only this annotation group. Not together with `dataset`. */
  annotationGroup?: string;
  /** Name of the export; also the zip's file name. */
  name?: string;
  /** Extract the zip into `location` and delete it (default true). */
  extract?: boolean;
  /** Pause between status polls (default 2000 ms). */
  pollIntervalMs?: number;
  /** Give up when the export is not ready after this long (default 1800000 ms, 30 min). */
  timeoutMs?: number;
  /** Where the download progress bar goes when it is a TTY (default `process.stderr`). */
  progress?: ProgressStream;
}

export interface SearchExportResult {
  exportId: string;
  /** Absolute path of the directory holding the export. */
  location: string;
  /** Absolute path of the kept zip, or null when it was extracted (and deleted). */
  zipPath: string | null;
  /** Extracted files, relative to `location`, sorted; empty when not extracted. */
  files: string[];
}
