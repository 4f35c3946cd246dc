// `npm start`: build the web demo (demo/, Vite) and serve the build on http://localhost, printing
// its URL. The page runs the embedded fortune model in a Web Worker on the browser's WebGPU.
// `--port N` picks the port (default 5173), `--open` also opens the default browser.
import { build, preview } from "vite";
import { fileURLToPath } from "node:url";

const configFile = fileURLToPath(new URL("../demo/vite.config.ts", import.meta.url));
const arg = (name) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};

console.log("building the demo…");
await build({ configFile });
const server = await preview({
  configFile,
  preview: {
    host: "127.0.0.1",
    port: Number(arg("port") ?? 5173),
    strictPort: false,
    open: process.argv.includes("--open"),
  },
});
const address = server.httpServer.address();
// localhost, not 127.0.0.1: browsers treat it as a secure context, where WebGPU exists.
console.log(`Kiln demo: http://localhost:${address.port}/  (Ctrl-C to stop)`);
