/**
 * The demo's list of real chat models: `models/catalog.json` (the build copies it next to the
 * page), GGUF files on the Hugging Face Hub with their quantization and size. The list is data:
 * the page reads it at start, offers its entries in the model panel, and loads the one picked by
 * its URL, through the model store, as it loads any URL. Its URLs may be relative to the
 * catalog's own (a catalog served with its files).
 */

/** One chat model of the catalog. */
export interface CatalogEntry {
  /** The model's name. */
  name: string;
  /** The GGUF file's URL, resolved against the catalog's. */
  url: string;
  /** Its quantization (`Q8_0`, `Q4_K_M`, ...). */
  quant: string;
  /** Its size in bytes: what a first load downloads. */
  bytes: number;
}

const isEntry = (v: unknown): v is CatalogEntry => {
  const e = v as Record<string, unknown> | null;
  return typeof e === "object" && e !== null && typeof e.name === "string" &&
    typeof e.url === "string" && typeof e.quant === "string" && Number.isSafeInteger(e.bytes);
};

/**
 * The entries of the catalog at `url`; an unreachable catalog, or one not of the catalog's
 * shape (`{models: [{name, url, quant, bytes}]}`), is an `Error` naming the URL and what is wrong.
 */
export async function loadCatalog(url: string): Promise<CatalogEntry[]> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${res.statusText}`.trim());
  const data = await res.json().catch(() => undefined) as { models?: unknown } | undefined;
  const models = data?.models;
  if (!Array.isArray(models)) throw new Error(`${url}: expected {models: [...]}`);
  return models.map((m, i) => {
    if (!isEntry(m)) throw new Error(`${url}: models[${i}]: expected {name, url, quant, bytes}`);
    return { name: m.name, url: new URL(m.url, url).href, quant: m.quant, bytes: m.bytes };
  });
}

/** An entry as the list shows it: `Qwen3-0.6B · Q8_0 · 639 MB`. */
export function entryLabel(e: CatalogEntry): string {
  return `${e.name} · ${e.quant} · ${Math.round(e.bytes / 1e6)} MB`;
}

/** Fill `select` with the entries (each option's value is its index). */
export function fillCatalog(select: HTMLSelectElement, entries: readonly CatalogEntry[]): void {
  select.replaceChildren(
    ...entries.map((e, i) => {
      const option = document.createElement("option");
      option.value = String(i);
      option.textContent = entryLabel(e);
      return option;
    }),
  );
}

/**
 * Offer the catalog at `url` in `form` (its `select` and submit button in a fieldset, enabled
 * once the list is read unless the page is busy, and a `.hint` that says why when the list cannot
 * be read): a submit calls `pick` with the chosen entry's URL.
 */
export function offerCatalog(
  form: HTMLFormElement,
  url: string,
  pick: (url: string) => void,
): void {
  const select = form.querySelector("select")!;
  let entries: CatalogEntry[] = [];
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const entry = entries[Number(select.value)];
    if (entry) pick(entry.url);
  });
  loadCatalog(url).then((read) => {
    entries = read;
    fillCatalog(select, read);
    const busy = ["loading", "generating"].includes(document.body.dataset.state ?? "");
    form.querySelector("fieldset")!.disabled = busy || read.length === 0;
  }, (e: Error) => {
    form.querySelector(".hint")!.textContent = `no list of chat models: ${e.message}`;
  });
}
