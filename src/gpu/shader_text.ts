/**
 * Where shader files come from: `shaders/<path>` (WGSL kernels and fragments, and the lookup
 * tables some fragments bind) fetched relative to this module (file: URLs under Deno, http under
 * a browser or Vite's dev server). The npm package's build replaces this module with one that
 * holds the text of every file under `shaders/`, so bundlers and static folders need no shader
 * files beside the JavaScript (`scripts/build_package.mjs`).
 */

/** The text of `shaders/<path>` (`path` with its extension, e.g. `lib/quant_words.wgsl`). */
export async function loadShaderFile(path: string): Promise<string> {
  // Not `new URL(\`...${path}\`, import.meta.url)` written out: Vite's dev server rewrites that
  // form into a glob of `shaders/*`, which misses the files in its subfolders.
  const relative = `../../shaders/${path}`;
  const url = new URL(relative, import.meta.url);
  const r = await fetch(url);
  if (!r.ok) throw new Error(`shaders/${path}: ${r.status} ${r.statusText} (${url})`);
  return await r.text();
}
