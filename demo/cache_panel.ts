/**
 * The demo's view of the library's model store: the models cached in this origin (Origin Private
 * File System, or Cache Storage where it is missing) with their sizes (a partial download marked:
 * the next load resumes it) and a Delete button each.
 */
import { cachedModels, deleteCachedModel } from "../src/store/browser.ts";

/** One cached model as the store lists it (only what the panel shows). */
export interface CachedModelView {
  base: string;
  name: string;
  bytes: number;
  complete: boolean;
}

/** What the panel calls: the store's list and delete. */
export interface CacheApi {
  list(): Promise<CachedModelView[]>;
  remove(base: string): Promise<boolean>;
}

/** The browser's model store as the panel sees it. */
export const storeApi: CacheApi = {
  list: async () =>
    (await cachedModels()).map((m) => ({
      base: m.base,
      name: m.name,
      bytes: m.bytes,
      complete: m.files.every((f) => f.complete),
    })),
  remove: (base) => deleteCachedModel(base),
};

const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

/** The list of cached models in `root`, redrawn by `refresh()`. */
export class CachePanel {
  constructor(
    readonly root: HTMLElement,
    readonly api: CacheApi,
    /** Called when a delete fails (the message names the model). */
    readonly onError: (message: string) => void,
    /** Called after a model was deleted and the list redrawn. */
    readonly onDeleted?: (base: string) => void,
  ) {}

  async refresh(): Promise<void> {
    let models: CachedModelView[];
    try {
      models = await this.api.list();
    } catch (e) {
      this.root.textContent = `cannot list the cache: ${(e as Error).message}`;
      return;
    }
    this.root.replaceChildren();
    if (models.length === 0) {
      this.root.textContent = "no models cached";
      return;
    }
    const list = document.createElement("ul");
    for (const m of models) {
      const item = document.createElement("li");
      item.dataset.base = m.base;
      item.dataset.bytes = String(m.bytes);
      item.dataset.complete = String(m.complete);
      const label = document.createElement("span");
      label.textContent = `${m.name}: ${mb(m.bytes)}${m.complete ? "" : " (partial: resumes)"}`;
      label.title = m.base;
      const del = document.createElement("button");
      del.type = "button";
      del.textContent = "Delete";
      del.onclick = async () => {
        del.disabled = true;
        try {
          await this.api.remove(m.base);
        } catch (e) {
          this.onError(`deleting ${m.name}: ${(e as Error).message}`);
        }
        await this.refresh();
        this.onDeleted?.(m.base);
      };
      item.append(label, " ", del);
      list.append(item);
    }
    this.root.append(list);
  }
}
