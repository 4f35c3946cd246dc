/**
 * Streaming a response body into a store entry (for `download.ts`): piece by piece into the
 * entry's writer, never the whole body in memory, each piece hashed as it is written; a body
 * longer than announced is refused, and a backend's write failure named (`ResourceExhausted`
 * when the storage is full).
 */
import { EngineError } from "../contract/errors.ts";
import type { EntryStorage } from "./storage.ts";

/**
 * Stream `res`'s body into the entry from `from`, hashing it with each of `hashes`: at most
 * `want` bytes (more is an `InvalidArgument`). Returns the bytes stored and, if the body broke,
 * why.
 */
export async function storeBody(
  storage: EntryStorage,
  key: string,
  from: number,
  want: number,
  res: Response,
  hashes: ({ update(bytes: Uint8Array): unknown } | undefined)[],
  onBytes: (n: number) => void,
): Promise<{ bytes: number; error?: string }> {
  const writer = await storage.writer(key, from);
  let bytes = 0;
  const reader = bodyReader(res.body!);
  try {
    for (;;) {
      const value = await reader.next();
      if (value === undefined) return { bytes };
      if (bytes + value.length > want) {
        await reader.cancel().catch(() => {});
        throw EngineError.invalidArgument(
          `${res.url || "the server"}: sent more than the ${want} bytes it announced`,
        );
      }
      try {
        await writer.write(value);
      } catch (e) {
        throw writeError(key, e, from + bytes, res.url);
      }
      for (const h of hashes) h?.update(value);
      bytes += value.length;
      onBytes(bytes);
    }
  } catch (e) {
    if (e instanceof EngineError) throw e;
    return { bytes, error: (e as Error).message };
  } finally {
    await writer.close();
  }
}

/** Bytes of the buffer a body is read into, where it is a byte stream. */
const PIECE_BYTES = 1 << 20;

/**
 * A body's bytes piece by piece. Where the body is a byte stream (fetch in Chromium and Deno),
 * each piece is read into one reused buffer (a BYOB reader), valid until the next call: a
 * download of gigabytes then leaves no garbage of network chunks behind it (writers copy or
 * store the bytes before their `write` settles). Else the stream's own chunks.
 */
function bodyReader(body: ReadableStream<Uint8Array>) {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    byob = undefined; // not a byte stream
  }
  const plain = byob ? undefined : body.getReader();
  let buffer = new ArrayBuffer(PIECE_BYTES);
  return {
    async next(): Promise<Uint8Array | undefined> {
      if (plain) {
        const { done, value } = await plain.read();
        return done ? undefined : value;
      }
      const { done, value } = await byob!.read(new Uint8Array(buffer));
      if (done || value === undefined) return undefined;
      buffer = value.buffer as ArrayBuffer;
      return value;
    },
    cancel: () => (byob ?? plain)!.cancel(),
  };
}

/**
 * A backend's write failure at byte `at`: `ResourceExhausted` when the storage is full (a quota
 * the browser enforces on writes, whatever `estimate()` said before), naming the byte.
 */
function writeError(key: string, e: unknown, at: number, url: string): EngineError {
  const name = (e as Error)?.name;
  const full = name === "QuotaExceededError" || /no space/i.test((e as Error)?.message ?? "");
  const what = url || `model store entry ${key}`;
  return new EngineError(
    full ? "ResourceExhausted" : "Unknown",
    full
      ? `${what}: the model store is full after ${at} bytes (${(e as Error)?.message ?? e})`
      : `${what}: writing at byte ${at} of the model store entry: ${(e as Error)?.message ?? e}`,
    { cause: e },
  );
}
