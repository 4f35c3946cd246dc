/**
 * The demo's Vite build: `demo/` is the root, the engine worker is bundled as an ES module
 * worker, WGSL files referenced by `new URL(..., import.meta.url)` become assets, and the embedded
 * fortune model is copied to `models/fortune/` next to the page, and onnxruntime-web's `.wasm`
 * to `ort/` (the worker's ort engine gets that folder as `wasmPaths`, for ONNX exports).
 */
import { defineConfig, type Plugin } from "vite";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const FORTUNE = fileURLToPath(new URL("../models/fortune/", import.meta.url));
const FILES = ["config.json", "tokenizer.json", "model.safetensors", "README.md"];

const ORT_DIST = fileURLToPath(
  new URL("../node_modules/onnxruntime-web/dist/", import.meta.url),
);
/** The runtime `onnxruntime-web/webgpu` (the ort engine's import) loads. */
const ORT_WASM = ["ort-wasm-simd-threaded.asyncify.wasm"];

function ortWasm(): Plugin {
  return {
    name: "kiln-ort-wasm",
    generateBundle() {
      for (const name of ORT_WASM) {
        this.emitFile({
          type: "asset",
          fileName: `ort/${name}`,
          source: readFileSync(ORT_DIST + name),
        });
      }
    },
  };
}

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
  plugins: [embeddedModel(), ortWasm()],
});
