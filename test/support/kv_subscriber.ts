/**
 * `test/integrations/kv_subscriber.py` as a child process: an independent KV event subscriber
 * (Debian's python3-zmq, -msgpack, -xxhash) on a server's PUB and replay sockets.
 */
import { PYTHON } from "./python.ts";

const SCRIPT = new URL("../integrations/kv_subscriber.py", import.meta.url).pathname;

/** What the subscriber found (its JSON line; see the script). */
export interface SubscriberResult {
  batches: number;
  events: number;
  blocks: string[];
  mismatches: unknown[];
  unknown_removals: number;
  live_gaps: number;
  replayed: number;
  live_batches: number;
  dp_ranks: number[];
  /** How batches and their events were laid out: `list/list`, `dict/dict`, `list/dict`. */
  layouts: string[];
}

export interface Subscriber {
  /** Settles when the subscriber has printed what it found and exited. */
  result: Promise<SubscriberResult>;
  /** `batches` were published in all (drain to the last); absent: drain until quiet. */
  done(batches?: number): Promise<void>;
}

/** Start the subscriber on `endpoints` and wait for its `ready`; `extra`: more flags. */
export async function startSubscriber(
  endpoints: { pub: string; replay: string },
  extra: string[] = [],
): Promise<Subscriber> {
  const child = new Deno.Command(PYTHON, {
    args: [SCRIPT, "--endpoint", endpoints.pub, "--replay", endpoints.replay, ...extra],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = lineReader(child.stdout);
  const first = await reader.read();
  if (first !== "ready") {
    throw new Error(`subscriber: ${first} ${await new Response(child.stderr).text()}`);
  }
  const writer = child.stdin.getWriter();
  const result = (async () => {
    const line = await reader.read();
    const status = await child.status;
    const err = await new Response(child.stderr).text();
    if (!status.success || line === undefined) throw new Error(`subscriber failed: ${err}`);
    return JSON.parse(line) as SubscriberResult;
  })();
  return {
    result,
    async done(batches?: number) {
      const line = batches === undefined ? "done\n" : `done ${batches}\n`;
      await writer.write(new TextEncoder().encode(line)).catch(() => {});
      await writer.close().catch(() => {});
    },
  };
}

/** The lines of `stream`, one per `read()` (undefined at the end). */
function lineReader(stream: ReadableStream<Uint8Array>) {
  const text = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  return {
    async read(): Promise<string | undefined> {
      for (;;) {
        const i = buf.indexOf("\n");
        if (i >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          return line;
        }
        const r = await text.read();
        if (r.done) return undefined;
        buf += r.value;
      }
    },
  };
}
