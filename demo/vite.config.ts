/**
 * The demo's Vite build: `demo/` is the root, the engine worker is bundled as an ES module
 * worker with every file under `shaders/` inlined as the npm package does (the kernels are
 * composed from fragments in subfolders, which a `new URL` asset glob does not reach), and the
 * embedded fortune model is copied to `models/fortune/` next to the page, with the list of chat
 * models offered by URL, `models/catalog.json`.
 */
import { defineConfig, type Plugin } from "vite";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { shaderModule } from "../scripts/build_package.mjs";

const FORTUNE = fileURLToPath(new URL("../models/fortune/", import.meta.url));
const CATALOG = fileURLToPath(new URL("../models/catalog.json", import.meta.url));
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
      this.emitFile({
        type: "asset",
        fileName: "models/catalog.json",
        source: readFileSync(CATALOG),
      });
    },
  };
}

/** `src/gpu/shader_text.ts` replaced by the package build's module of inlined shader files. */
function inlinedShaders(): Plugin {
  const target = fileURLToPath(new URL("../src/gpu/shader_text.ts", import.meta.url));
  return {
    name: "kiln-inlined-shaders",
    enforce: "pre",
    load: (id) => (id.split("?")[0] === target ? shaderModule() : null),
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
  // The engine runs in the worker, whose bundle takes its own plugins.
  worker: { format: "es", plugins: () => [inlinedShaders()] },
  // onnxruntime-web (the worker's ort engine, for ONNX exports) finds its .wasm through
  // `new URL("ort-wasm-simd-threaded.asyncify.wasm", import.meta.url)`: the build emits that file
  // as an asset and rewrites the URL, so it needs no `wasmPaths`. Pre-bundling it for the dev
  // server would move the module away from the file; serve it as it is.
  optimizeDeps: { exclude: ["onnxruntime-web"] },
  plugins: [inlinedShaders(), embeddedModel()],
});
