/**
 * A loopback HTTP server for a checkpoint directory: HEAD for sizes, GET with byte ranges. Its
 * options make it behave like the servers users have: one that ignores Range (Python's
 * `http.server`), one that refuses HEAD, and a single-page-app server that answers an HTML page
 * with 200 for every path it has no file for. It counts what it sends.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { fileSource } from "../../src/adapters/deno/file_source.ts";
import type { ByteSource } from "../../src/formats/source.ts";

export interface RangeServerOptions {
  /** Honour Range with 206 (default true); false: every GET answers 200 with the whole file. */
  range?: boolean;
  /** `Accept-Ranges` to send on HEAD and GET (default: none sent). */
  acceptRanges?: string;
  /** How HEAD is answered: with the size (default), 405, or 200 without a length. */
  head?: "size" | "405" | "no-size";
  /**
   * Answer every path it has no file for with this HTML page and 200 (an SPA fallback), with
   * `fallbackType` as its Content-Type (default `text/html; charset=utf-8`).
   */
  fallback?: string;
  fallbackType?: string;
  /** Files of the directory (names under it) to treat as absent. */
  hide?: readonly string[];
  /**
   * Break the connection (an error in the body stream) once a GET of `path` has sent the file's
   * bytes up to offset `at`: the first `times` such responses (default 1; Infinity: all).
   */
  cut?: { path: string; at: number; times?: number }[];
  /** Send bodies at about this many bytes per second. */
  throttle?: number;
  /** Send an ETag on HEAD and GET: `"sha256"` (the content's hash, quoted, as HF's CDN does) or `"version"` (`"v1"`, ...). */
  etag?: "sha256" | "version";
  /** Send HF's `x-linked-etag` (the content's SHA-256, quoted) on HEAD and GET. */
  linkedSha?: boolean;
  /** Give this SHA-256 instead of the true one (a server whose file does not match its hash). */
  wrongSha?: string;
  /** After `afterGets` GETs of `path`, the file changes (every byte flipped, the next version). */
  change?: { path: string; afterGets: number };
  /** Claim a Content-Length this many bytes more than the body on every 206/200 of a file. */
  lieLength?: number;
  /** Answer GETs (not HEAD) of files with an HTML page. */
  htmlGets?: boolean;
}

/** One request the server answered. */
export interface Served {
  method: string;
  /** The path under the base (`config.json`). */
  path: string;
  range: string | null;
  status: number;
  /** Bytes of body sent (counted as the server sends them). */
  bytes: number;
}

export interface RangeServer {
  /** The base URL (ends in `/`). */
  base: string;
  /** The Range headers it was asked for. */
  ranges: string[];
  /** Every request, in order. */
  served: Served[];
  /** GETs of `path` so far. */
  gets(path: string): number;
  /** Body bytes sent for `path` (all requests). */
  bytesSent(path: string): number;
  shutdown(): Promise<void>;
}

/**
 * `bytes` as a stream that adds to `record.bytes` what the server takes to send: a body the
 * client cancels counts what went out before (socket buffers: about a MB on loopback), not all.
 */
function counted(
  bytes: Uint8Array,
  record: Served,
  cutAt = Infinity,
  throttle = Infinity,
): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (at >= cutAt) return controller.error(new Error("cut"));
      if (at >= bytes.length) return controller.close();
      const step = Math.min(65536, cutAt - at);
      if (throttle < Infinity) await new Promise((r) => setTimeout(r, (step / throttle) * 1000));
      const chunk = bytes.slice(at, at + step);
      at += chunk.length;
      record.bytes += chunk.length;
      controller.enqueue(chunk);
    },
  }, { highWaterMark: 0 });
}

export function rangeServer(dir: string, options: RangeServerOptions = {}): RangeServer {
  const ranges: string[] = [];
  const served: Served[] = [];
  const hidden = new Set(options.hide ?? []);
  const getCount = new Map<string, number>();
  const cutsDone = new Map<string, number>();
  const hex = (b: Uint8Array) =>
    [...sha256(b)].map((x) => x.toString(16).padStart(2, "0")).join("");
  /** The file at `path` as served now: its bytes (flipped once changed) and version. */
  const current = async (src: ByteSource, path: string) => {
    const bytes = await src.read(0, src.size);
    const changed = options.change?.path === path &&
      (getCount.get(path) ?? 0) >= options.change.afterGets;
    return { bytes: changed ? bytes.map((b) => b ^ 0xff) : bytes, version: changed ? 2 : 1 };
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname.replace("/m/", "");
    const range = req.headers.get("range");
    const answer = (
      body: Uint8Array | null,
      init: ResponseInit = {},
      cutAt?: number,
    ): Response => {
      const status = init.status ?? 200;
      const record: Served = { method: req.method, path, range, status, bytes: 0 };
      served.push(record);
      const headers = new Headers(init.headers);
      if (options.acceptRanges !== undefined) headers.set("accept-ranges", options.acceptRanges);
      if (body === null || req.method === "HEAD") return new Response(null, { ...init, headers });
      if (!headers.has("content-length")) headers.set("content-length", String(body.length));
      return new Response(counted(body, record, cutAt, options.throttle), {
        ...init,
        status,
        headers,
      });
    };
    const src = hidden.has(path) ? undefined : await fileSource(dir + path);
    if (!src) {
      if (options.fallback === undefined) {
        return answer(new TextEncoder().encode("no"), { status: 404, statusText: "Not Found" });
      }
      const page = new TextEncoder().encode(options.fallback);
      const type = options.fallbackType ?? "text/html; charset=utf-8";
      return answer(page, {
        headers: { "content-type": type, "content-length": String(page.length) },
      });
    }
    const file = await current(src, path);
    const meta = new Headers();
    const sha = options.wrongSha ?? hex(file.bytes);
    if (options.etag === "sha256") meta.set("etag", `"${sha}"`);
    if (options.etag === "version") meta.set("etag", `"v${file.version}"`);
    if (options.linkedSha) meta.set("x-linked-etag", `"${sha}"`);
    if (req.method === "HEAD") {
      if (options.head === "405") return answer(null, { status: 405 });
      if (options.head === "no-size") return answer(null, { headers: meta });
      meta.set("content-length", String(src.size));
      return answer(null, { headers: meta });
    }
    getCount.set(path, (getCount.get(path) ?? 0) + 1);
    if (options.htmlGets) {
      const page = new TextEncoder().encode("<!doctype html><title>app</title>");
      return answer(page, { headers: { "content-type": "text/html" } });
    }
    const cut = options.cut?.find((c) => c.path === path);
    const cutDone = cutsDone.get(path) ?? 0;
    const cutting = cut !== undefined && cutDone < (cut.times ?? 1);
    const [, a, b] = range === null ? [] : /bytes=(\d+)-(\d*)/.exec(range) ?? [];
    const whole = range === null || options.range === false || a === undefined;
    const start = whole ? 0 : Number(a);
    const end = whole || b === "" ? src.size - 1 : Math.min(Number(b), src.size - 1);
    if (!whole) ranges.push(range!);
    const body = file.bytes.subarray(start, end + 1);
    const cutAt = cutting && cut.at >= start && cut.at <= end ? cut.at - start : undefined;
    if (cutAt !== undefined) cutsDone.set(path, cutDone + 1);
    if (options.lieLength) meta.set("content-length", String(body.length + options.lieLength));
    if (!whole) meta.set("content-range", `bytes ${start}-${end}/${src.size}`);
    return answer(body, { status: whole ? 200 : 206, headers: meta }, cutAt);
  });
  return {
    base: `http://127.0.0.1:${server.addr.port}/m/`,
    ranges,
    served,
    gets: (path) => getCount.get(path) ?? 0,
    bytesSent: (path) => served.filter((s) => s.path === path).reduce((n, s) => n + s.bytes, 0),
    shutdown: () => server.shutdown(),
  };
}

/**
 * For tests: a function that runs `body` against a fresh `rangeServer` for `dir` with the given
 * options and shuts the server down after, pass or fail.
 */
export function rangeServerRunner(
  dir: string,
): (options: RangeServerOptions, body: (s: RangeServer) => Promise<void>) => Promise<void> {
  return async (options, body) => {
    const s = rangeServer(dir, options);
    try {
      await body(s);
    } finally {
      await s.shutdown();
    }
  };
}
