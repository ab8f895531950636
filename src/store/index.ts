/**
 * The store's one entry point for the rest of src/ (docs/ARCHITECTURE.md, "The storage engine's
 * rooms"): what the domain, the worker, the sinks and the operations use of it. Its rooms import
 * each other as the rules of .dependency-cruiser.cjs allow; nothing outside src/store reaches
 * into a room but through here.
 */
export { type EventRecord } from './record/event-record.js';
export { isCanonicalId } from './record/ids.js';
export { type DeletionReason, type EventChange, type StoreChange } from './record/store-changes.js';
export { DAY_MICROS, formatMicros, formatMicrosOrNull, isCalendarDate, parseIsoMicros } from './record/timestamps.js';
export { DiskReserve, freeBytes } from './log/disk-reserve.js';
export { kernelPageBytes } from './log/kernel-page.js';
export { StagingFile } from './log/staging-file.js';
export { type StoredFile } from './log/stored-file.js';
export { fileIdsOf, type IndexedField } from './index/index-keys.js';
export { type BackfillProgress } from './index/search-index.js';
export { DEFAULT_CHECKPOINT_MAX_MS, DEFAULT_CHECKPOINT_MS } from './head/checkpoint-pace.js';
export { countEvents, type EventQuery, matchesQuery, type MetadataCondition, type MetadataOperator, oldestAndNewest, type PageSink, scanEvents, scanPlan } from './read/event-query.js';
export { countEventsInTurns, scanEventsInTurns, scanInTurns } from './read/scan-turns.js';
export { type RecordCheck, RecordChecker } from './read/record-checker.js';
export { planSearch, type SearchCondition } from './read/event-search.js';
export { openStoreView, StoreView } from './read/store-view.js';
export { readSinkCursor } from './ledger/sink-cursors.js';
export { isProtected, sinkBacklog, unshipped } from './ledger/sink-ledger.js';
export { type ConsistencyReport } from './engine/consistency.js';
export { type DeletionTally, type FileRef, type TombstoneLogger } from './engine/event-deletion.js';
export { type LogPosition } from './index/lmdb-env.js';
export { EventStore } from './engine/event-store.js';
export { LifecycleStore } from './engine/lifecycle-store.js';
export { type Attachment, attachStagedBlob, finalizeEvent } from './engine/event-updates.js';
export { draftsOlderThan, eventsOldestFirst, filesByAge, oldestDraft, retentionBacklog, retentionCutoff } from './engine/cleanup-queries.js';
export { type DecodedImage, type NewEvent, prepareCreateRecord, type PreparedCreate } from './engine/prepared-create.js';
export { type CheckReport, type RebuildReport } from './engine/check-report.js';
export { rebuildIndex, rewriteRecordCopies } from './engine/index-rebuild.js';
export { type UpgradeReport } from './engine/record-copies-upgrade.js';
export { checkStore, holdForCheck } from './engine/store-check.js';
export { LogScrub, type ScrubFinding, type ScrubStatus } from './engine/log-scrub.js';
export { clockStatus, heldClock, type HeldClock, runningAtCreation } from './engine/store-clock.js';
