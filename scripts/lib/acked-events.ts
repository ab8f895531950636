/**
 * Events a harness had acknowledged, and the check that the store still holds exactly them:
 * each one listed, each image giving back its exact bytes, nothing else stored (a refused
 * request must leave nothing half-stored), counters and filtered queries in agreement.
 */
import { fixture } from './fixtures.js';
import type { StoreClient } from './http-client.js';
import { checkAgreement } from './query-agreement.js';
import { checkFile, listAllEvents, mapParallel, type ListedEvent } from './store-reads.js';

/** An acknowledged create: its id and created_at, and the fixture behind each image id. */
export interface AckedEvent {
  id: string;
  createdAt: string;
  images: { fileId: string; fixture: string }[];
}

/** What a verification found. */
export interface Verification {
  problems: string[];
  listed: ListedEvent[];
}

/** The acknowledged events of one store. */
export class AckedEvents {
  readonly events = new Map<string, AckedEvent>();

  /** Records an acknowledged create. */
  add(event: AckedEvent): void {
    this.events.set(event.id, event);
  }

  /** Forgets every event (after a reset). */
  clear(): void {
    this.events.clear();
  }

  /**
   * Checks the store at `client` against the acknowledged events.
   * @param mayBeGone events the store was allowed to delete (e.g. past retention); those missing
   *   are forgotten instead of reported
   */
  async verify(client: StoreClient, mayBeGone: (event: AckedEvent) => boolean = () => false): Promise<Verification> {
    const problems: string[] = [];
    const listed = await listAllEvents(client);
    const listedIds = new Set(listed.map((e) => e.id));
    for (const event of listed) if (!this.events.has(event.id)) problems.push(`event ${event.id} stored, never acknowledged`);
    const files: { fileId: string; fixture: string; event: string }[] = [];
    for (const event of [...this.events.values()]) {
      if (listedIds.has(event.id)) files.push(...event.images.map((i) => ({ ...i, event: event.id })));
      else if (mayBeGone(event)) this.events.delete(event.id);
      else problems.push(`acknowledged event ${event.id} lost`);
    }
    const results = await mapParallel(files, 8, (f) => checkFile(client, `/images/${f.fileId}`, fixture(f.fixture)));
    results.forEach((result, i) => {
      if (result !== 'ok') problems.push(`image ${files[i].fileId} of ${files[i].event}: ${result}`);
    });
    problems.push(...(await checkAgreement(client, listed)));
    return { problems, listed };
  }
}
