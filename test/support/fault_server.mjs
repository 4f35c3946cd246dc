// deno-lint-ignore-file explicit-module-boundary-types
// A fault-injecting static file server (Node's http module) for the browser tests: it serves files
// at fixed paths (a big model among them) with HEAD, GET, single byte ranges (206), an ETag and
// HF's `x-linked-etag` (the file's sha256, computed once and cached under the ignored
// `.cache/fault-server/`), and, per path and run, faults: cut the connection after N body bytes (once),
// throttle, ignore Range, lie about Content-Length, answer HTML, change the bytes and ETag. Every
// request is recorded. Anything else goes to a Vite dev server (middleware mode) over the
// repository, so that a test page imports Kiln's sources from the same origin as the model.
import { createHash } from "node:crypto";
import {
  createReadStream,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { resolve as resolvePath } from "node:path";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The sha256 (hex) of `file`, cached under the ignored `.cache/fault-server/` (never beside the
 * file, which may be in the repository) with the size and mtime it was taken at (recomputed when
 * either changed).
 */
export async function fileSha256(file) {
  const st = statSync(file);
  const stamp = `${st.size} ${st.mtimeMs}`;
  const dir = fileURLToPath(new URL("../../.cache/fault-server/", import.meta.url));
  mkdirSync(dir, { recursive: true });
  const cache = `${dir}${resolvePath(file).replaceAll("/", "_")}.sha256`;
  if (existsSync(cache)) {
    const [hash, ...rest] = readFileSync(cache, "utf8").trim().split(" ");
    if (rest.join(" ") === stamp) return hash;
  }
  const h = createHash("sha256");
  for await (const chunk of createReadStream(file, { highWaterMark: 4 << 20 })) h.update(chunk);
  const hash = h.digest("hex");
  writeFileSync(cache, `${hash} ${stamp}\n`);
  return hash;
}

/**
 * Faults of one path (all optional; `setFaults` replaces them, `{}` clears):
 * - `cutAfter`: close the socket once the path has sent this many body bytes in total since the
 *   faults were set (over all its requests), once; later requests are served whole.
 * - `throttle`: bytes per second for the path's bodies.
 * - `ignoreRange`: answer a Range request with 200 and the whole file.
 * - `lieLength`: add this to the Content-Length header (more: the body ends early and the socket
 *   closes; less: only that many bytes are sent).
 * - `html`: answer 200 `text/html` with a small page instead of the file.
 * - `changeAfter`: after this many GET requests of the path, its bytes change (each XORed with
 *   the version number) and so does its ETag (`x-linked-etag` keeps the original hash, as a
 *   stale manifest would). `bump(path)` changes it at once.
 */

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".json": "application/json" };

function typeOf(path) {
  const ext = /\.[a-z0-9]+$/.exec(path)?.[0] ?? "";
  return TYPES[ext] ?? "application/octet-stream";
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Start the server on 127.0.0.1 (ephemeral port). `files` maps URL paths to files on disk.
 * Returns `{ origin, requests, setFaults(path, faults), bump(path), reset(), bytesSent(path),
 * close() }`; `requests` is the log: `{ method, path, range, status, bytes, cut }`, `bytes` the
 * body bytes sent (filled in when the response ends).
 */
export async function startFaultServer({ files = {}, vite = true } = {}) {
  const entries = new Map();
  for (const [path, file] of Object.entries(files)) {
    const size = statSync(file).size;
    entries.set(path, { file, size, sha: await fileSha256(file), version: 0, gets: 0 });
  }
  const faults = new Map();
  const sent = new Map();
  const requests = [];
  let viteServer;
  if (vite) {
    const { createServer: createVite } = await import("vite");
    viteServer = await createVite({
      root: ROOT,
      configFile: false,
      logLevel: "warn",
      clearScreen: false,
      appType: "mpa",
      server: { middlewareMode: true, hmr: false, watch: null },
      optimizeDeps: { noDiscovery: true, include: [] },
    });
  }

  async function serveFile(req, res, path, e, record) {
    const f = faults.get(path) ?? {};
    if (req.method === "GET") {
      e.gets++;
      if (f.changeAfter !== undefined && e.gets > f.changeAfter && e.version === 0) e.version = 1;
    }
    const etag = `"${e.sha}${e.version ? `-v${e.version}` : ""}"`;
    if (f.html) {
      const body = Buffer.from("<!doctype html><title>Not a model</title><p>Sign in to continue.");
      res.writeHead(200, { "content-type": "text/html", "content-length": body.length });
      record.status = 200;
      res.end(req.method === "HEAD" ? undefined : body);
      record.bytes = req.method === "HEAD" ? 0 : body.length;
      return;
    }
    const range = f.ignoreRange ? null : /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    let start = 0, end = e.size - 1;
    if (range) {
      start = Number(range[1]);
      if (range[2] !== "") end = Math.min(Number(range[2]), e.size - 1);
      if (start >= e.size || start > end) {
        res.writeHead(416, { "content-range": `bytes */${e.size}` });
        record.status = 416;
        res.end();
        return;
      }
    }
    const length = end - start + 1;
    const headers = {
      "content-type": typeOf(path),
      "content-length": Math.max(0, length + (f.lieLength ?? 0)),
      "accept-ranges": "bytes",
      etag,
      "x-linked-etag": `"${e.sha}"`,
      "x-linked-size": String(e.size),
      "access-control-expose-headers": "etag, x-linked-etag, x-linked-size, content-range",
    };
    if (range) headers["content-range"] = `bytes ${start}-${end}/${e.size}`;
    record.status = range ? 206 : 200;
    res.writeHead(record.status, headers);
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    const limit = Math.min(length, length + Math.min(0, f.lieLength ?? 0));
    const stream = createReadStream(e.file, {
      start,
      end: start + limit - 1,
      highWaterMark: f.throttle ? 64 << 10 : 1 << 20,
    });
    const t0 = Date.now();
    let done = 0;
    try {
      for await (let chunk of stream) {
        if (res.destroyed) break;
        const total = sent.get(path) ?? 0;
        if (f.cutAfter !== undefined && !f.cutDone && total + chunk.length >= f.cutAfter) {
          chunk = chunk.subarray(0, Math.max(0, f.cutAfter - total));
          f.cutDone = true;
          if (e.version) chunk = xor(chunk, e.version);
          await write(res, chunk);
          done += chunk.length;
          sent.set(path, total + chunk.length);
          record.bytes = done;
          record.cut = true;
          res.socket?.destroy();
          return;
        }
        if (f.throttle) {
          // Each chunk goes out no sooner than the rate allows for it.
          const due = t0 + ((done + chunk.length) / f.throttle) * 1000;
          if (due > Date.now()) await sleep(due - Date.now());
        }
        if (e.version) chunk = xor(chunk, e.version);
        if (!(await write(res, chunk))) break;
        done += chunk.length;
        record.bytes = done;
        sent.set(path, total + chunk.length);
      }
    } finally {
      stream.destroy();
    }
    if ((f.lieLength ?? 0) > 0) res.socket?.destroy();
    else res.end();
  }

  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    const e = entries.get(path);
    if (e === undefined) {
      if (viteServer) viteServer.middlewares(req, res, () => res.writeHead(404).end());
      else res.writeHead(404).end();
      return;
    }
    const record = {
      method: req.method,
      path,
      range: req.headers.range ?? null,
      status: 0,
      bytes: 0,
      cut: false,
    };
    requests.push(record);
    serveFile(req, res, path, e, record).catch((err) => {
      record.error = String(err);
      res.destroy();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  // localhost is a secure context (navigator.gpu, OPFS).
  const origin = `http://localhost:${server.address().port}`;
  return {
    origin,
    requests,
    /** Replace the faults of `path` (and restart its byte count for `cutAfter`). */
    setFaults(path, f = {}) {
      faults.set(path, { ...f });
      sent.set(path, 0);
      const e = entries.get(path);
      if (e) e.gets = 0;
    },
    /** Change `path`'s bytes and ETag now. */
    bump(path) {
      entries.get(path).version++;
    },
    /** Forget the request log, the byte counts, the faults and any change of the bytes. */
    reset() {
      requests.length = 0;
      sent.clear();
      faults.clear();
      for (const e of entries.values()) [e.version, e.gets] = [0, 0];
    },
    /** Body bytes `path` sent since the last reset or `setFaults` (all paths when omitted). */
    bytesSent(path) {
      if (path !== undefined) return sent.get(path) ?? 0;
      return requests.reduce((n, r) => n + r.bytes, 0);
    },
    sha256(path) {
      return entries.get(path)?.sha;
    },
    async close() {
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
      await viteServer?.close();
    },
  };
}

function xor(chunk, v) {
  const out = Buffer.from(chunk);
  for (let i = 0; i < out.length; i++) out[i] ^= v;
  return out;
}

/** Write `chunk`, waiting for drain; false when the response was closed meanwhile. */
function write(res, chunk) {
  if (res.destroyed) return Promise.resolve(false);
  if (res.write(chunk)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (v) => {
      res.off("drain", onDrain);
      res.off("close", onClose);
      resolve(v);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    res.on("drain", onDrain);
    res.on("close", onClose);
  });
}
