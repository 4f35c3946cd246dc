/**
 * The demo's Vite build: `demo/` is the root, the engine worker is bundled as an ES module
 * worker, WGSL files referenced by `new URL(..., import.meta.url)` become assets, and the embedded
 * fortune model is copied to `models/fortune/` next to the page.
 */
import { defineConfig, type Plugin } from "vite";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const FORTUNE = fileURLToPath(new URL("../models/fortune/", import.meta.url));
const FILES = [
  "config.json",
  "tokenizer.json",
  "tokenizer_config.json",
  "generation_config.json",
  "model.safetensors",
  "README.md",
];

function embeddedModel(): Plugin {
  return {
    name: "kiln-embedded-model",
    generateBundle() {
      for (const name of readdirSync(FORTUNE).filter((n) => FILES.includes(n))) {
        this.emitFile({
          type: "asset",
          fileName: `models/fortune/${name}`,
          source: readFileSync(FORTUNE + name),
        });
      }
    },
  };
}

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "./",
  publicDir: false,
  // A multi-page app: unknown paths are 404s, not index.html (a missing model file must say so).
  appType: "mpa",
  logLevel: "warn",
  build: {
    outDir: fileURLToPath(new URL("../dist/demo/", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    chunkSizeWarningLimit: 4096,
  },
  worker: { format: "es" },
  // onnxruntime-web (the worker's ort engine, for ONNX exports) finds its .wasm through
  // `new URL("ort-wasm-simd-threaded.asyncify.wasm", import.meta.url)`: the build emits that file
  // as an asset and rewrites the URL, so it needs no `wasmPaths`. Pre-bundling it for the dev
  // server would move the module away from the file; serve it as it is.
  optimizeDeps: { exclude: ["onnxruntime-web"] },
  plugins: [embeddedModel()],
});
