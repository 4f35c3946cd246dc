// The Vite setup an app embedding Kiln needs. Kiln's module worker is found through
// `new Worker(new URL(...), { type: "module" })` inside the package, built as an ES module worker.
// Kiln probes for optional model files (`tokenizer_config.json`), so a missing file must be a 404,
// not the single-page fallback to index.html: `appType: "mpa"`. Vite 8's dev server needed no
// `optimizeDeps.exclude` for the package (tried with and without).
import { defineConfig } from "vite";

export default defineConfig({
  appType: "mpa",
  worker: { format: "es" },
  build: { target: "es2022" },
});
