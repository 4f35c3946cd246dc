/**
 * Where WGSL text comes from: `shaders/<name>.wgsl` fetched relative to this module (file: URLs
 * under Deno, http under a browser or Vite's dev server). The npm package's build replaces this
 * module with one that holds the text of every `shaders/*.wgsl`, so bundlers and static folders
 * need no WGSL files beside the JavaScript (`scripts/build_package.mjs`).
 */

/** The text of `shaders/<name>.wgsl`. */
export async function loadShaderText(name: string): Promise<string> {
  const url = new URL(`../../shaders/${name}.wgsl`, import.meta.url);
  const r = await fetch(url);
  if (!r.ok) throw new Error(`shader ${name}: ${r.status} ${r.statusText} (${url})`);
  return await r.text();
}
