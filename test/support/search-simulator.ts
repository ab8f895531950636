/**
 * A local simulator of the hosted image search API (docs/SEARCH.md, "The hosted API"), as a real
 * HTTP server on port 0. It implements the documented semantics over a fixture catalog of 30 images
 * and videos: project search with offset paging and the body filters, workspace search evaluating
 * the query language (through the package's own parser) with continuation tokens, the search export
 * flow with a real zip, `api_key` checks (401 unknown key, 403 foreign workspace, 404 unknown
 * workspace or project), and fault injection (any status, `Retry-After`, body).
 *
 * Ordering, which the hosted API does not document: newest upload first, then id. Semantic search
 * (free text, `prompt`, `like-image:`) is approximated: every word of the text must occur in the
 * image's caption, tags, class names or file name; "like" an image means sharing one of its
 * classes.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseQuery } from '../../src/query-language/query-parser.js';
import { QuerySyntaxError } from '../../src/query-language/query-syntax-error.js';
import type { Comparison, QueryNode } from '../../src/query-language/query-ast.js';

export interface CatalogImage {
  id: string;
  filename: string;
  /** Project slugs the image belongs to (all in workspace `acme`). */
  projects: string[];
  split: 'train' | 'test' | 'valid';
  width: number;
  height: number;
  /** Class name -> number of labeled items. */
  classes: Record<string, number>;
  tags: string[];
  /** ISO 8601 upload time. */
  created: string;
  owner: string;
  mediaType: 'image' | 'video';
  /** In the project's dataset (false: still in a batch or annotation-job staging area). */
  inDataset: boolean;
  batchId: string | null;
  annotationJobId: string | null;
  /** Upload job. */
  jobId: string;
  annotationGroup: string;
  /** Words the simulated semantic search matches. */
  caption: string;
}

/** The workspace the simulator's key may use, and one it may not (403). */
export const WORKSPACE = 'acme';
export const FOREIGN_WORKSPACE = 'rival';
export const PROJECTS = ['parking-lot', 'warehouse', 'night-cams'] as const;
export const DEFAULT_API_KEY = 'sim-secret-key-7f3a9c';

type Row = [id: string, filename: string, projects: string, split: CatalogImage['split'], size: string, classes: string, tags: string, created: string, caption: string, extra?: Partial<CatalogImage>];

/** Compact fixture table: size `WxH`, classes `name=count,...`, tags `a,b`. */
const ROWS: Row[] = [
  ['pl-01', 'lot-morning-01.jpg', 'parking-lot', 'train', '1920x1080', 'car=3,person=1', 'day', '2024-01-05T08:00:00Z', 'cars parked in a sunny lot'],
  ['pl-02', 'lot-morning-02.jpg', 'parking-lot', 'train', '1920x1080', 'car=5', 'day', '2024-01-06T08:00:00Z', 'full parking lot with cars'],
  ['pl-03', 'lot-noon-01.jpg', 'parking-lot', 'valid', '1280x720', 'car=1,truck=1', 'day,busy', '2024-01-20T12:00:00Z', 'delivery truck next to a car'],
  ['pl-04', 'lot-noon-02.jpg', 'parking-lot', 'test', '1280x720', '', 'day', '2024-02-01T12:00:00Z', 'empty asphalt lot'],
  ['pl-05', 'lot-dusk-01.jpg', 'parking-lot', 'train', '640x480', 'car=2,person=2', 'dusk', '2024-02-10T17:30:00Z', 'people walking to their cars at dusk'],
  ['pl-06', 'lot-dusk-02.png', 'parking-lot', 'train', '640x480', 'person=4', 'dusk,busy', '2024-02-11T17:30:00Z', 'crowd of people crossing'],
  ['pl-07', 'lot-rain-01.jpg', 'parking-lot', 'valid', '1920x1080', 'car=2,umbrella=1', 'rain', '2024-02-29T09:00:00Z', 'rainy day with umbrella and cars'],
  ['pl-08', 'lot-rain-02.jpg', 'parking-lot', 'test', '1920x1080', 'car=1', 'rain', '2024-03-01T09:00:00Z', 'wet car in the rain'],
  ['pl-09', 'lot-snow-01.jpg', 'parking-lot', 'train', '3840x2160', 'car=6,truck=2', 'snow', '2024-03-02T10:00:00Z', 'snow covered cars and trucks', { batchId: 'batch-7', inDataset: false }],
  ['pl-10', 'lot-snow-02.jpg', 'parking-lot', 'train', '3840x2160', '', 'snow', '2024-03-03T10:00:00Z', 'snowy empty lot', { batchId: 'batch-7', inDataset: false }],
  ['pl-11', 'gate-cam-01.jpg', 'parking-lot,night-cams', 'train', '1280x720', 'car=1,person=1', 'night', '2024-03-10T23:00:00Z', 'car at the gate at night'],
  ['pl-12', 'gate-cam-02.jpg', 'parking-lot,night-cams', 'valid', '1280x720', 'person=1', 'night', '2024-03-11T23:10:00Z', 'person at the gate at night'],
  ['pl-13', 'gate-cam-03.jpg', 'parking-lot,night-cams', 'test', '1280x720', '', 'night', '2024-03-12T23:20:00Z', 'dark empty gate', { annotationJobId: 'aj-3', inDataset: false }],
  ['pl-14', 'lot-overview.mp4', 'parking-lot', 'train', '1920x1080', 'car=4', 'day', '2024-03-15T12:00:00Z', 'video of cars entering the lot', { mediaType: 'video' }],
  ['wh-01', 'aisle-01.jpg', 'warehouse', 'train', '1920x1080', 'pallet=4,forklift=1', 'aisle', '2024-01-08T07:00:00Z', 'forklift moving pallets in an aisle'],
  ['wh-02', 'aisle-02.jpg', 'warehouse', 'train', '1920x1080', 'pallet=6', 'aisle', '2024-01-09T07:00:00Z', 'stacked pallets in an aisle'],
  ['wh-03', 'aisle-03.jpg', 'warehouse', 'valid', '1920x1080', 'pallet=2,person=1', 'aisle,busy', '2024-01-25T07:00:00Z', 'worker checking pallets'],
  ['wh-04', 'dock-01.jpg', 'warehouse', 'train', '2560x1440', 'truck=1,pallet=3', 'dock', '2024-02-02T06:00:00Z', 'truck at the loading dock'],
  ['wh-05', 'dock-02.jpg', 'warehouse', 'test', '2560x1440', 'truck=2', 'dock', '2024-02-03T06:00:00Z', 'two trucks at the dock'],
  ['wh-06', 'dock-03.jpg', 'warehouse', 'train', '2560x1440', 'forklift=2,person=2', 'dock,busy', '2024-02-14T06:00:00Z', 'forklifts and workers at the dock', { owner: 'bob' }],
  ['wh-07', 'shelf-01.jpg', 'warehouse', 'train', '800x600', 'box=12', 'shelf', '2024-02-20T15:00:00Z', 'boxes on a shelf', { owner: 'bob' }],
  ['wh-08', 'shelf-02.jpg', 'warehouse', 'valid', '800x600', 'box=9', 'shelf', '2024-02-21T15:00:00Z', 'cardboard boxes on shelves', { owner: 'bob' }],
  ['wh-09', 'shelf-03.jpg', 'warehouse', 'train', '800x600', '', 'shelf', '2024-02-22T15:00:00Z', 'empty shelf', { annotationJobId: 'aj-5', inDataset: false, owner: 'bob' }],
  ['wh-10', 'forklift-cam.mp4', 'warehouse', 'train', '1280x720', 'forklift=1', 'aisle', '2024-03-04T11:00:00Z', 'video of a forklift driving', { mediaType: 'video', owner: 'bob' }],
  ['wh-11', 'spill-01.jpg', 'warehouse', 'test', '1024x768', 'spill=1', 'hazard', '2024-03-05T11:00:00Z', 'liquid spill on the floor', { jobId: 'job-b', owner: 'bob' }],
  ['wh-12', 'spill-02.jpg', 'warehouse', 'train', '1024x768', 'spill=1,person=1', 'hazard,busy', '2024-03-06T11:00:00Z', 'worker near a spill', { jobId: 'job-b', owner: 'bob' }],
  ['nc-01', 'street-night-01.jpg', 'night-cams', 'train', '1920x1080', 'car=2', 'night', '2024-03-20T22:00:00Z', 'street with cars at night', { jobId: 'job-c' }],
  ['nc-02', 'street-night-02.jpg', 'night-cams', 'train', '1920x1080', 'car=1,person=1', 'night', '2024-03-21T22:00:00Z', 'pedestrian and car at night', { jobId: 'job-c' }],
  ['nc-03', 'street-night-03.jpg', 'night-cams', 'valid', '1920x1080', 'cat=1', 'night', '2024-03-22T22:00:00Z', 'a cat crossing the street at night', { jobId: 'job-c' }],
  ['nc-04', 'street-night-04.jpg', 'night-cams', 'test', '1920x1080', '', 'night', '2024-03-23T22:00:00Z', 'quiet dark street', { jobId: 'job-c' }],
];

/** The fixture catalog, newest first (the simulator's default order). */
export function fixtureCatalog(): CatalogImage[] {
  return ROWS.map(([id, filename, projects, split, size, classes, tags, created, caption, extra]): CatalogImage => {
    const [width, height] = size.split('x').map(Number);
    return {
      id, filename, projects: projects.split(','), split, width, height,
      classes: Object.fromEntries(classes === '' ? [] : classes.split(',').map((pair) => {
        const [name, count] = pair.split('=');
        return [name, Number(count)];
      })),
      tags: tags.split(','), created, owner: 'alice', mediaType: 'image', inDataset: true,
      batchId: null, annotationJobId: null, jobId: 'job-a', annotationGroup: 'objects', caption,
      ...extra,
    };
  }).sort(newestFirst);
}

function newestFirst(a: CatalogImage, b: CatalogImage): number {
  return b.created.localeCompare(a.created) || a.id.localeCompare(b.id);
}

/** An injected failure, answered before authentication, `times` times (default 1). */
export interface Fault {
  status: number;
  times?: number;
  /** `Retry-After` header value. */
  retryAfter?: string;
  /** JSON body (object) or plain-text body (string); default `{error: "Injected <status>"}`. */
  body?: unknown;
  /** Only requests to this route; default any route. */
  route?: Route;
  /** Never answer (until the simulator closes), to exercise client timeouts; `status` is unused. */
  hang?: boolean;
}

export type Route = 'project' | 'workspace' | 'export-start' | 'export-status' | 'download' | 'key-workspace' | 'workspace-info' | 'project-info';

export interface RecordedRequest {
  method: string;
  route: Route | 'unknown';
  path: string;
  /** Query parameters, `api_key` included: the tests check it travels there. */
  query: Record<string, string>;
  body: unknown;
}

export interface SimulatorOptions {
  apiKey?: string;
  /** Status polls answering `{ready: false}` before an export is ready (default 2). */
  exportPollsBeforeReady?: number;
}

const FORMATS = ['coco', 'yolo', 'yolov8', 'voc', 'createml', 'csv'];
const PROJECT_FIELDS = ['id', 'name', 'annotations', 'labels', 'split', 'tags', 'owner', 'url', 'embedding', 'created'];
const WORKSPACE_FIELDS = ['tags', 'width', 'height', 'filename', 'aspectRatio', 'split', 'projects', 'annotations', 'labels', 'owner', 'url'];

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export class SearchSimulator {
  readonly catalog = fixtureCatalog();
  readonly requests: RecordedRequest[] = [];
  readonly apiKey: string;
  baseUrl = '';
  private readonly server: Server;
  private readonly faults: Fault[] = [];
  private readonly tokens = new Map<string, { signature: string; offset: number }>();
  private readonly exports = new Map<string, { pollsLeft: number; zip: Buffer }>();
  private readonly exportPollsBeforeReady: number;
  private counter = 0;

  private constructor(options: SimulatorOptions) {
    this.apiKey = options.apiKey ?? DEFAULT_API_KEY;
    this.exportPollsBeforeReady = options.exportPollsBeforeReady ?? 2;
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: Error) => send(res, 500, { error: `Simulator bug: ${error.message}` }));
    });
  }

  /** Starts a simulator on 127.0.0.1, port 0. */
  static async start(options: SimulatorOptions = {}): Promise<SearchSimulator> {
    const simulator = new SearchSimulator(options);
    await new Promise<void>((resolve) => simulator.server.listen(0, '127.0.0.1', resolve));
    simulator.baseUrl = `http://127.0.0.1:${(simulator.server.address() as AddressInfo).port}`;
    return simulator;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Queues a failure; faults are consumed in order by the requests they match. */
  inject(fault: Fault): void {
    this.faults.push({ times: 1, ...fault });
  }

  /** Adds an image as the newest upload (so it shifts every offset page by one). */
  addImage(image: Partial<CatalogImage> & { id: string }): void {
    const newest = this.catalog.reduce((max, item) => (item.created > max ? item.created : max), '');
    this.catalog.push({
      ...fixtureCatalog()[0], filename: `${image.id}.jpg`, created: new Date(Date.parse(newest) + 60_000).toISOString(), ...image,
    });
    this.catalog.sort(newestFirst);
  }

  /** Recorded requests to one route. */
  requestsTo(route: Route): RecordedRequest[] {
    return this.requests.filter((request) => request.route === route);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.baseUrl);
    const segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const route = routeOf(req.method ?? 'GET', segments);
    const text = await readBody(req);
    let body: unknown = text;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      // recorded as text; JSON routes answer 400 below
    }
    this.requests.push({ method: req.method ?? 'GET', route, path: url.pathname, query: Object.fromEntries(url.searchParams), body });

    const faultIndex = this.faults.findIndex((fault) => fault.route === undefined || fault.route === route);
    if (faultIndex !== -1) {
      const fault = this.faults[faultIndex];
      fault.times = (fault.times ?? 1) - 1;
      if (fault.times <= 0) this.faults.splice(faultIndex, 1);
      if (fault.hang) return;
      const headers: Record<string, string> = fault.retryAfter === undefined ? {} : { 'retry-after': fault.retryAfter };
      send(res, fault.status, fault.body ?? { error: `Injected ${fault.status}` }, headers);
      return;
    }
    try {
      if (route === 'unknown') throw new HttpError(404, `No route ${req.method} ${url.pathname}`);
      if (route === 'download') {
        // A signed link, as storage links are: its signature or the key opens it.
        if (!this.signatureValid(segments[1], url.searchParams.get('sig'))) this.authenticate(url.searchParams.get('api_key'));
        this.download(res, segments[1]);
        return;
      }
      this.authenticate(url.searchParams.get('api_key'));
      if (route === 'key-workspace') {
        send(res, 200, { welcome: 'Welcome to the hosted API', workspace: WORKSPACE });
        return;
      }
      this.workspaceOf(segments[0]);
      if (route === 'workspace-info' || route === 'project-info') {
        send(res, 200, this.describe(segments[1]));
        return;
      }
      if (route !== 'export-status' && (typeof body !== 'object' || body === null || Array.isArray(body))) {
        throw new HttpError(400, 'The body must be a JSON object');
      }
      const payload = body as Record<string, unknown>;
      if (route === 'project') send(res, 200, this.projectSearch(segments[1], payload));
      else if (route === 'workspace') send(res, 200, this.workspaceSearch(payload));
      else if (route === 'export-start') send(res, 202, this.startExport(payload));
      else send(res, 200, this.exportStatus(segments[3]));
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      send(res, error.status, { error: error.message });
    }
  }

  /** The SDK's bootstrap answers: the workspace with its projects, or one project of it. */
  private describe(project: string | undefined): object {
    const projectInfo = (slug: string) => ({
      id: `${WORKSPACE}/${slug}`,
      name: slug,
      type: 'object-detection',
      images: this.catalog.filter((image) => image.projects.includes(slug)).length,
    });
    const workspace = { name: WORKSPACE, url: WORKSPACE, projects: PROJECTS.map(projectInfo) };
    if (project === undefined) return { workspace };
    if (!(PROJECTS as readonly string[]).includes(project)) throw new HttpError(404, `Project ${project} not found`);
    return { workspace, project: projectInfo(project) };
  }

  private authenticate(key: string | null): void {
    if (key === null || key === '') throw new HttpError(401, 'Missing api_key');
    if (key !== this.apiKey) throw new HttpError(401, `Invalid api_key: ${key}`);
  }

  private workspaceOf(workspace: string): void {
    if (workspace === FOREIGN_WORKSPACE) throw new HttpError(403, `This API key has no access to workspace ${workspace}`);
    if (workspace !== WORKSPACE) throw new HttpError(404, `Workspace ${workspace} not found`);
  }

  private projectSearch(project: string, body: Record<string, unknown>): object {
    if (!(PROJECTS as readonly string[]).includes(project)) throw new HttpError(404, `Project ${project} not found`);
    const limit = integer(body.limit, 'limit', 50, 1, 250);
    const offset = integer(body.offset, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    const fields = fieldList(body.fields, PROJECT_FIELDS, ['id', 'created']);
    const mediaTypes = mediaTypeList(body.mediaTypes);
    const likeClasses = typeof body.like_image === 'string' ? this.classesOf(body.like_image) : undefined;
    const matches = this.catalog.filter((image) => image.projects.includes(project)
      && mediaTypes.includes(image.mediaType)
      && (typeof body.prompt !== 'string' || matchesText(image, body.prompt))
      && (likeClasses === undefined || shares(image, likeClasses))
      && (body.tag === undefined || image.tags.includes(String(body.tag)))
      && (body.class_name === undefined || (image.classes[String(body.class_name)] ?? 0) > 0)
      && (body.in_dataset !== true || image.inDataset)
      && (body.batch !== true || image.batchId !== null)
      && (body.batch_id === undefined || image.batchId === body.batch_id)
      && (body.annotation_job !== true || image.annotationJobId !== null)
      && (body.annotation_job_id === undefined || image.annotationJobId === body.annotation_job_id));
    const results = matches.slice(offset, offset + limit).map((image) => projectResult(image, fields, this.baseUrl));
    return { offset, total: matches.length, results };
  }

  private workspaceSearch(body: Record<string, unknown>): object {
    const query = this.checkedQuery(body.query);
    const pageSize = integer(body.pageSize, 'pageSize', 50, 1, 250);
    const fields = fieldList(body.fields, WORKSPACE_FIELDS, []);
    const mediaTypes = mediaTypeList(body.mediaTypes);
    const signature = JSON.stringify([body.query, pageSize, fields, mediaTypes]);
    let offset = 0;
    if (body.continuationToken !== undefined) {
      const state = this.tokens.get(String(body.continuationToken));
      if (state === undefined || state.signature !== signature) throw new HttpError(400, 'Invalid continuationToken for this query');
      offset = state.offset;
    }
    const matches = this.catalog.filter((image) => mediaTypes.includes(image.mediaType) && this.evaluate(query, image));
    const page = matches.slice(offset, offset + pageSize);
    const response: Record<string, unknown> = { results: page.map((image) => workspaceResult(image, fields, this.baseUrl)), total: matches.length };
    if (page.length === pageSize) {
      const token = `ct-${++this.counter}`;
      this.tokens.set(token, { signature, offset: offset + pageSize });
      response.continuationToken = token;
    }
    return response;
  }

  private startExport(body: Record<string, unknown>): object {
    const query = this.checkedQuery(body.query);
    const format = String(body.format ?? 'coco');
    if (!FORMATS.includes(format)) throw new HttpError(400, `Unknown export format ${format}`);
    if (body.dataset !== undefined && body.annotationGroup !== undefined) throw new HttpError(400, 'dataset and annotationGroup are exclusive');
    if (body.dataset !== undefined && !(PROJECTS as readonly string[]).includes(String(body.dataset))) {
      throw new HttpError(404, `Project ${String(body.dataset)} not found`);
    }
    const images = this.catalog.filter((image) => this.evaluate(query, image)
      && (body.dataset === undefined || image.projects.includes(String(body.dataset)))
      && (body.annotationGroup === undefined || image.annotationGroup === body.annotationGroup));
    const exportId = `exp-${++this.counter}`;
    this.exports.set(exportId, { pollsLeft: this.exportPollsBeforeReady, zip: exportZip(images, format, String(body.name ?? exportId)) });
    return { link: exportId };
  }

  private exportStatus(exportId: string): object {
    const state = this.exports.get(exportId);
    if (state === undefined) throw new HttpError(404, `Export ${exportId} not found`);
    if (state.pollsLeft > 0) {
      state.pollsLeft -= 1;
      return { ready: false };
    }
    return { ready: true, link: `${this.baseUrl}/exports/${exportId}.zip?sig=${exportSignature(exportId)}` };
  }

  private signatureValid(file: string, signature: string | null): boolean {
    return signature !== null && signature === exportSignature(file.replace(/\.zip$/, ''));
  }

  private download(res: ServerResponse, file: string): void {
    const state = this.exports.get(file.replace(/\.zip$/, ''));
    if (state === undefined || state.pollsLeft > 0) throw new HttpError(404, `Export file ${file} not found`);
    res.writeHead(200, { 'content-type': 'application/zip', 'content-length': state.zip.length });
    res.end(state.zip);
  }

  /** Parses a workspace query; 400 like the hosted API for a missing, empty or bad query. */
  private checkedQuery(query: unknown): QueryNode {
    if (typeof query !== 'string' || query.trim() === '') throw new HttpError(400, 'query is required');
    try {
      const tree = parseQuery(query);
      this.checkProjects(tree);
      return tree;
    } catch (error) {
      if (error instanceof QuerySyntaxError) throw new HttpError(400, error.message);
      throw error;
    }
  }

  /** Workspace search answers 400 for a `project:` outside the workspace (docs/SEARCH.md, "The hosted API"). */
  private checkProjects(node: QueryNode): void {
    if (node.type === 'and' || node.type === 'or') node.children.forEach((child) => this.checkProjects(child));
    else if (node.type === 'not') this.checkProjects(node.child);
    else if (node.type === 'filter' && (node.key === 'project' || node.key === 'dataset') && !(PROJECTS as readonly string[]).includes(projectSlug(node.project))) {
      throw new HttpError(400, `Project ${node.project} is not in workspace ${WORKSPACE}`);
    }
  }

  private classesOf(imageId: string): string[] {
    return Object.keys(this.catalog.find((image) => image.id === imageId)?.classes ?? {});
  }

  /** The query language's meaning over one image (docs/SEARCH.md, "Query language"). */
  private evaluate(node: QueryNode, image: CatalogImage): boolean {
    switch (node.type) {
      case 'and': return node.children.every((child) => this.evaluate(child, image));
      case 'or': return node.children.some((child) => this.evaluate(child, image));
      case 'not': return !this.evaluate(node.child, image);
      case 'all': return true;
      case 'text': return matchesText(image, node.text);
      case 'filter': break;
    }
    const annotations = Object.values(image.classes).reduce((sum, count) => sum + count, 0);
    switch (node.key) {
      case 'like-image': return shares(image, this.classesOf(node.imageId));
      case 'tag': return image.tags.includes(node.tag);
      case 'filename': return matchesName(image.filename.toLowerCase(), node.pattern.toLowerCase(), node.match);
      case 'split': return image.split === node.split;
      case 'job': return image.jobId === node.jobId;
      case 'class': return node.count === undefined
        ? (image.classes[node.className] ?? 0) > 0
        : compare(image.classes[node.className] ?? 0, node.count.op, node.count.value);
      case 'date': return compare(image.created.slice(0, 10), node.op, node.date);
      case 'project': return image.projects.includes(projectSlug(node.project));
      case 'dataset': return image.projects.includes(projectSlug(node.project)) && image.inDataset;
      default: {
        const measured = node.measure === 'annotations' ? annotations : image[node.measure];
        return node.bound === 'min' ? measured >= node.value : measured <= node.value;
      }
    }
  }
}

function routeOf(method: string, segments: string[]): Route | 'unknown' {
  const [, second, third, fourth] = segments;
  if (method === 'GET' && segments.length === 2 && segments[0] === 'exports') return 'download';
  if (method === 'POST' && segments.length === 3 && second === 'search' && third === 'v1') return 'workspace';
  if (method === 'POST' && segments.length === 3 && second === 'search' && third === 'export') return 'export-start';
  if (method === 'GET' && segments.length === 4 && second === 'search' && third === 'export' && fourth) return 'export-status';
  if (method === 'POST' && segments.length === 3 && third === 'search') return 'project';
  if (method === 'POST' && segments.length === 0) return 'key-workspace';
  if (method === 'GET' && segments.length === 1) return 'workspace-info';
  if (method === 'GET' && segments.length === 2) return 'project-info';
  return 'unknown';
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const isText = typeof body === 'string';
  const payload = isText ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': isText ? 'text/plain' : 'application/json', ...headers });
  res.end(payload);
}

function integer(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new HttpError(400, `${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

function fieldList(value: unknown, allowed: string[], fallback: string[]): string[] {
  if (value === undefined) return fallback;
  if (!Array.isArray(value) || value.some((field) => !allowed.includes(field))) throw new HttpError(400, `fields must be among ${allowed.join(', ')}`);
  return value as string[];
}

function mediaTypeList(value: unknown): string[] {
  if (value === undefined) return ['image'];
  if (!Array.isArray(value) || value.length === 0 || value.some((type) => type !== 'image' && type !== 'video')) {
    throw new HttpError(400, 'mediaTypes must list image and/or video');
  }
  return value as string[];
}

/** `acme/parking-lot` or a URL ending in the slug name the same project as `parking-lot`. */
function projectSlug(project: string): string {
  return project.split('/').filter(Boolean).pop() ?? project;
}

function stem(word: string): string {
  return word.toLowerCase().replace(/s$/, '');
}

function matchesText(image: CatalogImage, text: string): boolean {
  const haystack = new Set(
    [image.caption, image.tags.join(' '), Object.keys(image.classes).join(' '), image.filename.replace(/[^a-z0-9]+/gi, ' ')]
      .join(' ').split(/\s+/).filter(Boolean).map(stem),
  );
  return text.split(/\s+/).filter(Boolean).every((word) => haystack.has(stem(word)));
}

function shares(image: CatalogImage, classes: string[]): boolean {
  return classes.some((name) => (image.classes[name] ?? 0) > 0);
}

function matchesName(name: string, pattern: string, match: 'exact' | 'prefix' | 'suffix' | 'contains'): boolean {
  if (match === 'prefix') return name.startsWith(pattern);
  if (match === 'suffix') return name.endsWith(pattern);
  if (match === 'contains') return name.includes(pattern);
  return name === pattern;
}

function compare<T extends number | string>(actual: T, op: Comparison, expected: T): boolean {
  switch (op) {
    case '=': return actual === expected;
    case '>': return actual > expected;
    case '>=': return actual >= expected;
    case '<': return actual < expected;
    case '<=': return actual <= expected;
  }
}

function mediaUrls(image: CatalogImage, baseUrl: string): Record<string, string> {
  const url = `${baseUrl}/media/${image.id}.${image.mediaType === 'video' ? 'poster.jpg' : 'jpg'}`;
  return image.mediaType === 'video' ? { url, videoUrl: `${baseUrl}/media/${image.id}.mp4?expires=600` } : { url };
}

function projectResult(image: CatalogImage, fields: string[], baseUrl: string): Record<string, unknown> {
  const result: Record<string, unknown> = { id: image.id, mediaType: image.mediaType };
  const count = Object.values(image.classes).reduce((sum, n) => sum + n, 0);
  for (const field of fields) {
    if (field === 'name') result.name = image.filename;
    if (field === 'annotations') result.annotations = { count, classes: image.classes };
    if (field === 'labels') result.labels = Object.keys(image.classes);
    if (field === 'split') result.split = image.split;
    if (field === 'tags') result.tags = image.tags;
    if (field === 'owner') result.owner = image.owner;
    if (field === 'url') Object.assign(result, mediaUrls(image, baseUrl));
    if (field === 'embedding') result.embedding = [image.width / 4000, image.height / 4000, count / 20];
    if (field === 'created') result.created = image.created;
  }
  return result;
}

function workspaceResult(image: CatalogImage, fields: string[], baseUrl: string): Record<string, unknown> {
  const result: Record<string, unknown> = { id: image.id, mediaType: image.mediaType };
  const perProject: Record<string, unknown> = {};
  if (fields.includes('split')) perProject.split = image.split;
  if (fields.includes('projects')) perProject.inDataset = image.inDataset;
  if (fields.includes('annotations')) {
    perProject.annotations = { annotationGroup: image.annotationGroup, classes: Object.keys(image.classes), classCounts: image.classes };
  }
  if (fields.includes('labels')) perProject.labels = Object.keys(image.classes);
  if (Object.keys(perProject).length > 0) {
    result.projectData = Object.fromEntries(image.projects.map((project) => [project, { ...perProject }]));
  }
  for (const field of fields) {
    if (field === 'tags') result.tags = image.tags;
    if (field === 'width') result.width = image.width;
    if (field === 'height') result.height = image.height;
    if (field === 'filename') result.filename = image.filename;
    if (field === 'aspectRatio') result.aspectRatio = Math.round((image.width / image.height) * 10_000) / 10_000;
    if (field === 'owner') result.owner = image.owner;
    if (field === 'url') Object.assign(result, mediaUrls(image, baseUrl));
  }
  return result;
}

/** The files of an export: an annotation file in `format` plus one stand-in file per image. */
/** The signature of an export's download link (a stand-in for a storage service's signed URL). */
function exportSignature(exportId: string): string {
  return Buffer.from(`signed:${exportId}`).toString('base64url');
}

function exportZip(images: CatalogImage[], format: string, name: string): Buffer {
  const annotations = {
    info: { description: name, format },
    images: images.map((image, index) => ({ id: index, file_name: image.filename, width: image.width, height: image.height })),
    categories: [...new Set(images.flatMap((image) => Object.keys(image.classes)))].sort().map((category, id) => ({ id, name: category })),
  };
  return storedZip([
    { name: 'README.dataset.txt', data: Buffer.from(`${name}: ${images.length} images exported as ${format}\n`) },
    { name: `export/_annotations.${format}.json`, data: Buffer.from(JSON.stringify(annotations)) },
    ...images.map((image) => ({ name: `export/images/${image.filename}`, data: Buffer.from(`stand-in bytes of ${image.id}`) })),
  ]);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = CRC_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** A zip archive with every entry stored (method 0): local headers, central directory, end record. */
export function storedZip(entries: { name: string; data: Buffer }[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const { name, data } of entries) {
    const nameBytes = Buffer.from(name, 'utf8');
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(0, 8); // stored
    local.writeUInt32LE(0, 10); // time and date
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4); // version made by
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(0, 10);
    central.writeUInt32LE(0, 12);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, data);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + data.length;
  }
  const centralSize = centrals.reduce((sum, part) => sum + part.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}
