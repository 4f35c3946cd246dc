/**
 * The engines behind Kiln's `LanguageModel` sessions: one `KilnModel` per model URL (or set of
 * picked files) in this realm, opened by the first `create` that names it and shared by every
 * session on it (clones included), each holding a lease; the last lease given back closes it. A
 * `KilnModel` the page opened itself is shared too, and never closed here. Also what
 * `availability` asks: whether this realm has WebGPU, and whether a URL model is in the browser's
 * model store.
 */
import type { LoadProgress } from "../runtime/load_options.ts";
import { urlLayout } from "../formats/url_source.ts";
import { cachedModels } from "../store/browser.ts";
import type { Availability, KilnModelSource } from "./language_model_types.ts";
import { KilnModel, openModel, type OpenModelOptions } from "./open.ts";

/** One session's hold on its engine. */
export interface EngineLease {
  /** The engine's model, once loaded. */
  readonly ready: Promise<KilnModel>;
  /** Stop hearing the load's progress (a `create` aborted, or done). */
  unlisten(): void;
  /** A further lease on the same engine (a clone's). */
  another(): EngineLease;
  /** Give this lease back (again: nothing); the last one given back closes the engine. */
  release(): void;
}

interface Held {
  ready: Promise<KilnModel>;
  loaded: boolean;
  leases: number;
  listeners: Set<LoadProgress>;
}

const held = new Map<string, Held>();

/** The key of a model source in this realm (undefined for a page's own `KilnModel`). */
export function sourceKey(model: KilnModelSource): string | undefined {
  if (model instanceof KilnModel) return undefined;
  if (typeof model === "string" || model instanceof URL) {
    return urlLayout(new URL(model, globalThis.location?.href).href).location;
  }
  return "files:" + [...model].map((f) => `${f.name}\0${f.size}\0${f.lastModified}`).join("\n");
}

function lease(key: string, h: Held, onProgress: LoadProgress | undefined): EngineLease {
  let listening = onProgress;
  if (listening) h.listeners.add(listening);
  let given = false;
  h.leases++;
  const unlisten = () => {
    if (listening) h.listeners.delete(listening);
    listening = undefined;
  };
  return {
    ready: h.ready,
    unlisten,
    another: () => lease(key, h, undefined),
    release() {
      if (given) return;
      given = true;
      unlisten();
      if (--h.leases > 0) return;
      if (held.get(key) === h) held.delete(key);
      h.ready.then((m) => m.close()).catch(() => {});
    },
  };
}

/**
 * A lease on the engine of `model`: the one this realm holds for it, else a new one opened with
 * `options` (a load that fails is forgotten, so the next `create` tries again). `onProgress`
 * hears the load while it lasts.
 */
export function acquire(
  model: KilnModelSource,
  options: Omit<OpenModelOptions, "model" | "onProgress">,
  onProgress?: LoadProgress,
): EngineLease {
  const key = sourceKey(model);
  if (key === undefined) {
    const ready = Promise.resolve(model as KilnModel);
    const own = (): EngineLease => ({ ready, unlisten() {}, another: own, release() {} });
    return own();
  }
  let h = held.get(key);
  if (h === undefined) {
    const listeners = new Set<LoadProgress>();
    const fresh: Held = {
      ready: openModel({
        ...options,
        model: model as string | URL | readonly File[],
        onProgress: (...args) => {
          for (const l of listeners) l(...args);
        },
      }),
      loaded: false,
      leases: 0,
      listeners,
    };
    fresh.ready.then(() => fresh.loaded = true, () => {
      if (held.get(key) === fresh) held.delete(key);
    });
    held.set(key, h = fresh);
  }
  return lease(key, h, onProgress);
}

let adapter: Promise<boolean> | undefined;

/** Whether this realm has WebGPU with an adapter (asked once). */
export function hasWebGpu(): Promise<boolean> {
  adapter ??= (async () => {
    const gpu = (globalThis.navigator as { gpu?: GPU } | undefined)?.gpu;
    if (!gpu) return false;
    try {
      return (await gpu.requestAdapter()) !== null;
    } catch {
      return false;
    }
  })();
  return adapter;
}

/**
 * Whether `model` is ready here without a download: a page's own `KilnModel`, picked files, or a
 * model this realm holds are `available` (`downloading` while it loads); a URL is `available`
 * when the browser's model store has it whole (every file it holds for it complete, weights
 * among them), else `downloadable` (always, with `cache: false`).
 */
export async function modelAvailability(
  model: KilnModelSource,
  cache = true,
): Promise<Availability> {
  const key = sourceKey(model);
  if (key === undefined || key.startsWith("files:")) return "available";
  const h = held.get(key);
  if (h !== undefined) return h.loaded ? "available" : "downloading";
  if (!cache) return "downloadable";
  const stored = (await cachedModels()).find((m) => m.base === key);
  const weights = stored?.files.filter((f) => /\.(safetensors|gguf)$/.test(f.name)) ?? [];
  return stored !== undefined && weights.length > 0 && stored.files.every((f) => f.complete)
    ? "available"
    : "downloadable";
}
