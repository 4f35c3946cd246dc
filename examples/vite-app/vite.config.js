// The whole Vite setup an app embedding Kiln needs. Kiln's module worker is found through
// `new Worker(new URL(...), { type: "module" })` inside the package; `optimizeDeps.exclude` keeps
// Vite's dev server from pre-bundling the package, which would move that URL's base. Kiln probes
// for optional model files (`tokenizer_config.json`), so a missing file must be a 404, not the
// single-page fallback to index.html: `appType: "mpa"`.
import { defineConfig } from "vite";

export default defineConfig({
  appType: "mpa",
  optimizeDeps: { exclude: ["@kiln/kiln"] },
  worker: { format: "es" },
  build: { target: "es2022" },
});
