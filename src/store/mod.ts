/**
 * The model store: checkpoints downloaded once (resumably, verified, within the storage quota)
 * and read from local storage after. `ModelStore` over an `EntryStorage`: `MemoryStorage`,
 * `OpfsStorage` and `CacheStorageEntries` here (and `browser.ts`, the one a browser page or worker
 * uses); a directory's in `src/adapters/deno/`.
 *
 * @module
 */
export { type CachedFile, type CachedModel, ModelStore, type ModelStoreOptions } from "./store.ts";
export { entryKey, type EntryMeta, type EntryStorage, type EntryWriter } from "./storage.ts";
export { MemoryStorage } from "./memory.ts";
export { download, type DownloadOptions, type EntryName } from "./download.ts";
export { OpfsStorage } from "./opfs.ts";
export { CacheStorageEntries } from "./cache_storage.ts";
export { browserStore, cachedModels, deleteCachedModel, storedFiles } from "./browser.ts";
