/**
 * The store and the functions a test calls on it, as one module for a test to mock-import (tap's
 * `t.mockImport`) with a dependency replaced: a mock import loads its own copy of each module
 * above the replaced one, so the store, the updates called on it and the AppError they throw must
 * all come from that one copy (an AppError of another copy is not `instanceof` this one's).
 */
export { AppError } from '../../src/errors.js';
export { deleteRecords } from '../../src/store/engine/event-deletion.js';
export { EventStore } from '../../src/store/engine/event-store.js';
export { attachStagedBlob, finalizeEvent } from '../../src/store/engine/event-updates.js';
export { StoreView } from '../../src/store/read/store-view.js';
