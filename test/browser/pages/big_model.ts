/**
 * The big-model page (test/browser_big/): no checks of its own; the Node test drives it through
 * `window.__big`, whose calls each answer plain data. `rawFetch` reads a URL to its end and
 * drops the bytes (the page's own network speed, the load's yardstick); `load` runs `openModel`
 * on a model URL and keeps the model; `greedy` runs token ids through the engine's `LLMEngine`
 * with top logprobs; `close` ends the model. Errors are answered as `{ error }` with the
 * `EngineError` type when there is one, so a test can assert on a refusal.
 */
import { RequestContext } from "../../../src/contract/engine.ts";
import { EngineError } from "../../../src/contract/errors.ts";
import type { PreprocessedRequest } from "../../../src/contract/types.ts";
import { validateStream } from "../../../src/contract/validate.ts";
import * as store from "../../../src/store/mod.ts";
import * as open from "../../../src/worker/open.ts";

type Failure = { error: string; type?: string };

let model: open.KilnModel | undefined;

function failure(e: unknown): Failure {
  if (e instanceof EngineError) return { error: e.message, type: e.type };
  return { error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
}

const heap = () =>
  (performance as unknown as { memory?: { usedJSHeapSize: number } }).memory?.usedJSHeapSize;

/** The OPFS file at `path` (`dir/name`, from the origin's root). */
async function handleOf(path: string): Promise<FileSystemFileHandle> {
  let dir = await navigator.storage.getDirectory();
  const parts = path.split("/");
  for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p);
  return await dir.getFileHandle(parts[parts.length - 1]!);
}

const big = {
  /** Read `url` to its end, counting bytes; seconds and MB/s. */
  async rawFetch(url: string): Promise<{ bytes: number; seconds: number } | Failure> {
    try {
      const t0 = performance.now();
      const res = await fetch(url, { cache: "no-store" });
      const reader = res.body!.getReader();
      let bytes = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        bytes += value.length;
      }
      return { bytes, seconds: (performance.now() - t0) / 1000 };
    } catch (e) {
      return failure(e);
    }
  },

  /**
   * `openModel` on `url` with `options` (merged into its options: `engine`, and once the store
   * lands `cache`, `share`); seconds to a started engine, its `runtime_data`, the upload progress
   * seen.
   */
  async load(url: string, options: Record<string, unknown> = {}) {
    try {
      let uploaded = 0;
      const t0 = performance.now();
      // Seconds from the start to each phase's first and last report (download, weights, ...).
      const phases: Record<string, { first: number; last: number }> = {};
      model = await open.openModel({
        model: url,
        ...options,
        onProgress: (done: number, _total: number, _item: string, phase = "weights") => {
          const at = (performance.now() - t0) / 1000;
          const p = phases[phase] ??= { first: at, last: at };
          p.last = at;
          if (phase === "weights") uploaded = done;
        },
      } as open.OpenModelOptions);
      return {
        seconds: (performance.now() - t0) / 1000,
        phases,
        uploaded,
        sharing: model.sharing,
        config: model.config,
        pageHeap: heap(),
      };
    } catch (e) {
      return failure(e);
    }
  },

  /** Greedy tokens of `prompt` with their top-4 `[id, logprob]`, and the seconds they took. */
  async greedy(prompt: number[], maxTokens: number) {
    if (model === undefined) return { error: "no model loaded" };
    try {
      const request: PreprocessedRequest = {
        model: model.config.model,
        token_ids: prompt,
        stop_conditions: { max_tokens: maxTokens },
        sampling_options: { temperature: 0 },
        output_options: { logprobs: 4 },
        eos_token_ids: [],
        annotations: [],
      };
      const t0 = performance.now();
      const ids: number[] = [];
      const top: [number, number][][] = [];
      const firstAt: number[] = [];
      const stream = model.engine.generate(request, new RequestContext());
      for await (const c of validateStream(stream, { promptTokens: prompt.length })) {
        ids.push(...c.token_ids);
        for (const t of c.top_logprobs ?? []) {
          top.push(t.map((x): [number, number] => [x.token_id, x.logprob]));
        }
        if (c.token_ids.length > 0) firstAt.push((performance.now() - t0) / 1000);
      }
      return { ids, top, seconds: (performance.now() - t0) / 1000, firstTokenSeconds: firstAt[0] };
    } catch (e) {
      return failure(e);
    }
  },

  /** What the library exports by name (to see whether the store's API has landed). */
  exports: () => Object.keys(open),

  /** Call an export of the open or store module by name (`cachedModels`, `deleteCachedModel`). */
  async call(name: string, ...args: unknown[]) {
    const f = (open as Record<string, unknown>)[name] ?? (store as Record<string, unknown>)[name];
    if (typeof f !== "function") return { error: `no export ${name}` };
    try {
      return { value: await f(...args) };
    } catch (e) {
      return failure(e);
    }
  },

  /** Every file in the origin's OPFS (path, size), depth first. */
  async opfsFiles(): Promise<{ path: string; size: number }[]> {
    const out: { path: string; size: number }[] = [];
    const walk = async (dir: FileSystemDirectoryHandle, at: string) => {
      for await (const [name, h] of dir as unknown as AsyncIterable<[string, FileSystemHandle]>) {
        if (h.kind === "directory") await walk(h as FileSystemDirectoryHandle, `${at}${name}/`);
        else {out.push({
            path: at + name,
            size: (await (h as FileSystemFileHandle).getFile()).size,
          });}
      }
    };
    await walk(await navigator.storage.getDirectory(), "");
    return out;
  },

  /**
   * Read the largest OPFS file (a cached model's weights) start to end in `piece`-byte slices
   * (`File.slice().arrayBuffer()`, as the store reads it), one after another, with nothing else
   * to do: the yardstick of a load from OPFS. Bytes and seconds.
   */
  async opfsRead(piece: number): Promise<{ bytes: number; seconds: number } | Failure> {
    try {
      const largest = (await big.opfsFiles()).sort((a, b) => b.size - a.size)[0];
      if (largest === undefined) return { error: "OPFS is empty" };
      const file = await (await handleOf(largest.path)).getFile();
      const t0 = performance.now();
      let bytes = 0;
      for (let at = 0; at < file.size; at += piece) {
        bytes += (await file.slice(at, at + piece).arrayBuffer()).byteLength;
      }
      return { bytes, seconds: (performance.now() - t0) / 1000 };
    } catch (e) {
      return failure(e);
    }
  },

  /** Cut the largest OPFS file to `length` bytes (a short entry); its path. */
  async truncateLargestOpfsFile(length: number): Promise<string | Failure> {
    try {
      const largest = (await big.opfsFiles()).sort((a, b) => b.size - a.size)[0];
      if (largest === undefined) return { error: "OPFS is empty" };
      const w = await (await handleOf(largest.path)).createWritable({ keepExistingData: true });
      await w.truncate(length);
      await w.close();
      return largest.path;
    } catch (e) {
      return failure(e);
    }
  },

  /** Flip the byte at `offset` of the largest OPFS file (a cached model's weights); its path. */
  async corruptLargestOpfsFile(offset: number): Promise<string | Failure> {
    try {
      const files = await big.opfsFiles();
      const largest = files.sort((a, b) => b.size - a.size)[0];
      if (largest === undefined) return { error: "OPFS is empty" };
      let dir = await navigator.storage.getDirectory();
      const parts = largest.path.split("/");
      for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p);
      const handle = await dir.getFileHandle(parts[parts.length - 1]!);
      const old = new Uint8Array(
        await (await handle.getFile()).slice(offset, offset + 1).arrayBuffer(),
      );
      const w = await handle.createWritable({ keepExistingData: true });
      await w.write({ type: "write", position: offset, data: new Uint8Array([old[0]! ^ 0xff]) });
      await w.close();
      return largest.path;
    } catch (e) {
      return failure(e);
    }
  },

  async close() {
    await model?.close();
    model = undefined;
  },
};

(globalThis as unknown as { __big: typeof big }).__big = big;
document.body.dataset.state = "ready";
