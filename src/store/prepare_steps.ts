/**
 * Steps of `ModelStore`'s `prepare` (see `store.ts`): the progress of one file, folded into the
 * overall meter and reported at most every 100 ms (and when forced), and the confirming of the
 * absent marks of a model that loaded without those files.
 */
import type { DownloadProgress } from "../formats/source.ts";
import { Meter } from "./progress.ts";
import type { EntryStorage } from "./storage.ts";

/** How one file's download reports: its `onLoaded`, and `report` (forced: whatever the time). */
export interface FileProgress {
  /** Bytes of the file now present (fewer than before after a restart from zero). */
  onLoaded(loaded: number): void;
  /** Report where the file and the whole stand (at most every 100 ms unless `force`). */
  report(force: boolean): void;
}

/**
 * The progress of file `name` (`size` bytes, `present` of them stored already) within
 * `overall`, reported to `onProgress`.
 */
export function fileProgress(
  name: string,
  size: number,
  present: number,
  overall: Meter,
  onProgress?: (p: DownloadProgress) => void,
): FileProgress {
  const file = new Meter(size, present);
  let last = 0;
  const report = (force: boolean) => {
    const now = performance.now();
    if (!force && now - last < 100) return;
    last = now;
    onProgress?.({
      file: name,
      fileProgress: file.progress(),
      overall: overall.progress(),
    });
  };
  const onLoaded = (loaded: number) => {
    const delta = loaded - file.loaded;
    if (delta < 0) {
      overall.reset(overall.loaded + delta);
      file.reset(loaded);
    } else {
      file.add(delta);
      overall.add(delta);
    }
    report(false);
  };
  return { onLoaded, report };
}

/** The model at `location` loaded this far without its absent files: their marks hold. */
export async function confirmAbsent(storage: EntryStorage, location: string): Promise<void> {
  for (const key of await storage.keys()) {
    const m = await storage.meta(key);
    if (m?.base === location && m.absent !== undefined && !m.confirmed) {
      await storage.setMeta(key, { ...m, confirmed: true });
    }
  }
}
