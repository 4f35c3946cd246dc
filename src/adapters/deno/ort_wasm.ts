/**
 * onnxruntime-web's `.wasm` folder for Deno, as `wasmPaths`: in a Deno Worker its own lookup
 * fails (it resolves against a `null` base URL), so Deno callers name the folder themselves.
 */
export function ortWasmPaths(): string {
  return new URL("./", import.meta.resolve("onnxruntime-web/webgpu")).href;
}
