/**
 * The browser's model store: OPFS where `navigator.storage.getDirectory` works, else Cache
 * Storage, else none (undefined: models are read over the network each time). Its quota check
 * and persistence request are `navigator.storage.estimate()` and `persist()`. One store per
 * realm, opened on first use.
 */
import type { ModelFiles } from "../formats/source.ts";
import { urlFiles } from "../formats/url_source.ts";
import { CacheStorageEntries } from "./cache_storage.ts";
import { OpfsStorage } from "./opfs.ts";
import { type CachedModel, ModelStore } from "./store.ts";

interface StorageManagerLike {
  estimate?: () => Promise<{ usage?: number; quota?: number }>;
  persist?: () => Promise<boolean>;
}

let opened: Promise<ModelStore | undefined> | undefined;

/** This realm's model store (OPFS, else Cache Storage), or undefined where neither works. */
export function browserStore(): Promise<ModelStore | undefined> {
  opened ??= (async () => {
    // Deno has Cache Storage too, but keeps its models in a directory (`dir_storage.ts`).
    if ((globalThis as { Deno?: unknown }).Deno !== undefined) return undefined;
    const storage = await OpfsStorage.open() ?? await CacheStorageEntries.open();
    if (!storage) return undefined;
    const manager = (globalThis as { navigator?: { storage?: StorageManagerLike } }).navigator
      ?.storage;
    return new ModelStore(storage, {
      ...(manager?.estimate ? { estimate: () => manager.estimate!() } : {}),
      ...(manager?.persist ? { persist: () => manager.persist!() } : {}),
    });
  })();
  return opened;
}

/**
 * A checkpoint at `base` through the browser's model store (or straight over the network
 * where there is none, or when `cache` is false).
 */
export function storedFiles(base: string, cache = true): ModelFiles {
  if (!cache) return urlFiles(base);
  let resolved: ModelFiles | undefined;
  const files = browserStore().then((s) => resolved = s?.files(base) ?? urlFiles(base));
  const plain = urlFiles(base);
  return {
    location: plain.location,
    ...(plain.gguf === undefined ? {} : { gguf: plain.gguf }),
    open: async (name) => (await files).open(name),
    describeMissing: (name) => (resolved ?? plain).describeMissing!(name),
    prepare: async (names, onProgress) => await (await files).prepare?.(names, onProgress),
  };
}

/** The models in the browser's model store (none where there is no store). */
export async function cachedModels(): Promise<CachedModel[]> {
  return await (await browserStore())?.list() ?? [];
}

/** Delete the model at `base` from the browser's model store; whether it was there. */
export async function deleteCachedModel(base: string): Promise<boolean> {
  return await (await browserStore())?.delete(base) ?? false;
}
