/**
 * A loopback HTTP server for a checkpoint directory: HEAD for sizes, GET with byte ranges. Its
 * options make it behave like the servers users have: one that ignores Range (Python's
 * `http.server`), one that refuses HEAD, and a single-page-app server that answers an HTML page
 * with 200 for every path it has no file for. It counts what it sends.
 */
import { fileSource } from "../../src/adapters/deno/file_source.ts";

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
  /** Body bytes sent for `path` (all requests). */
  bytesSent(path: string): number;
  shutdown(): Promise<void>;
}

/**
 * `bytes` as a stream that adds to `record.bytes` what the server takes to send: a body the
 * client cancels counts what went out before (socket buffers: about a MB on loopback), not all.
 */
function counted(bytes: Uint8Array, record: Served): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      const chunk = bytes.slice(at, at + 65536);
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
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname.replace("/m/", "");
    const range = req.headers.get("range");
    const answer = (body: Uint8Array | null, init: ResponseInit = {}): Response => {
      const status = init.status ?? 200;
      const record: Served = { method: req.method, path, range, status, bytes: 0 };
      served.push(record);
      const headers = new Headers(init.headers);
      if (options.acceptRanges !== undefined) headers.set("accept-ranges", options.acceptRanges);
      if (body === null || req.method === "HEAD") return new Response(null, { ...init, headers });
      headers.set("content-length", String(body.length));
      return new Response(counted(body, record), { ...init, status, headers });
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
    if (req.method === "HEAD") {
      if (options.head === "405") return answer(null, { status: 405 });
      if (options.head === "no-size") return answer(null);
      return answer(null, { headers: { "content-length": String(src.size) } });
    }
    if (range === null || options.range === false) return answer(await src.read(0, src.size));
    ranges.push(range);
    const [, a, b] = /bytes=(\d+)-(\d+)/.exec(range)!;
    const start = Number(a), end = Math.min(Number(b), src.size - 1);
    const body = await src.read(start, end - start + 1);
    return answer(body, {
      status: 206,
      headers: { "content-range": `bytes ${start}-${end}/${src.size}` },
    });
  });
  return {
    base: `http://127.0.0.1:${server.addr.port}/m/`,
    ranges,
    served,
    bytesSent: (path) => served.filter((s) => s.path === path).reduce((n, s) => n + s.bytes, 0),
    shutdown: () => server.shutdown(),
  };
}
