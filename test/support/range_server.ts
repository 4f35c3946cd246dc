/** A loopback HTTP server for a checkpoint directory: HEAD for sizes, GET with byte ranges. */
import { fileSource } from "../../src/adapters/deno/file_source.ts";

export interface RangeServer {
  /** The base URL (ends in `/`). */
  base: string;
  /** The Range headers it was asked for. */
  ranges: string[];
  shutdown(): Promise<void>;
}

export function rangeServer(dir: string): RangeServer {
  const ranges: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname.replace("/m/", "");
    const src = await fileSource(dir + path);
    if (!src) return new Response("no", { status: 404, statusText: "Not Found" });
    if (req.method === "HEAD") {
      return new Response(null, { headers: { "content-length": String(src.size) } });
    }
    const range = req.headers.get("range");
    if (range === null) return new Response((await src.read(0, src.size)).slice());
    ranges.push(range);
    const [, a, b] = /bytes=(\d+)-(\d+)/.exec(range)!;
    const body = await src.read(Number(a), Number(b) - Number(a) + 1);
    return new Response(body.slice(), { status: 206 });
  });
  return {
    base: `http://127.0.0.1:${server.addr.port}/m/`,
    ranges,
    shutdown: () => server.shutdown(),
  };
}
