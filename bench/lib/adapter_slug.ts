/**
 * The adapter's short name the benchmarks put in their default result file names
 * (`bench/results/<bench>-<adapter>.json`), shared by every group of `bench/`.
 */

/** A short file-name-safe name for an adapter description. */
export function adapterSlug(adapter: string): string {
  if (/llvmpipe|lavapipe/i.test(adapter)) return "lavapipe";
  if (/swiftshader/i.test(adapter)) return "swiftshader";
  const gpu = adapter.match(/\b([ABHLTV]\d{2,3}[A-Z]?|RTX ?\d{4}|M\d (?:Pro|Max|Ultra)?)\b/i);
  const base = gpu ? gpu[1]! : adapter.split("/").pop()!;
  return base.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 40) ||
    "unknown";
}
