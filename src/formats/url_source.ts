/**
 * Model files over HTTP(S): `urlSource` (one file) and `urlFiles` (a checkpoint under a base
 * URL). Range requests where the server honours them; a server that ignores Range (Python's
 * `http.server`, many static hosts) is read once, whole, and every read sliced from that copy.
 *
 * Opening a file:
 * - `HEAD` gives its size (`Content-Length`). 404 is an absent file; an HTML answer
 *   (`Content-Type: text/html`) is an SPA fallback, so the file is absent too (see `html.ts`).
 * - A server that refuses HEAD (405, 501) or answers it without a length (some send none, some
 *   `Content-Length: 0`) is asked `GET` with `Range: bytes=0-0`: a 206 carries the size in
 *   `Content-Range: bytes 0-0/SIZE` for one byte of body. A 200 means the server ignores Range
 *   and is sending the whole file. A small one (up to 16 MiB: the JSON files) or one with no
 *   `Content-Length` (its body is the only way to learn the size) is read and kept as the
 *   file's copy; a larger one is dropped (the first read downloads it again: the drop wastes what
 *   was in flight, about a MB on loopback), since a file may be opened only to see that it
 *   exists (the ONNX variant probe) and a GB model must not be fetched for that.
 *
 * Reading:
 * - `Accept-Ranges: bytes` on the HEAD: ranges from the first read, concurrently. `none`: the
 *   whole file at the first read. No header (it is optional, RFC 9110 §14.3): the first read
 *   sends its Range request alone, and its answer decides for every read waiting on it: 206, the
 *   server honours Range; 200, the body is the whole file, which is kept. Asking costs nothing
 *   on a server without Range (its 200 is the one download), so a missing `Accept-Ranges` is not
 *   taken to mean "no Range" (that would hold a multi-GB file in memory on a server that
 *   supports Range without saying so).
 * - The whole-file copy is one download shared by every read (concurrent ones wait on it) and
 *   one copy in memory: reads return views into it, never copies. A failed download is retried
 *   by the next read. `release()` drops it (`GpuModel` does once the weights are on the GPU).
 */
import { EngineError } from "../contract/errors.ts";
import { htmlMessage, htmlPage, isHtmlType } from "./html.ts";
import type { ByteSource, ModelFiles } from "./source.ts";

function httpError(url: string, status: number, statusText: string): EngineError {
  const type = status === 404 ? "InvalidArgument" : "CannotConnect";
  return new EngineError(type, `${url}: HTTP ${status} ${statusText}`.trim());
}

async function send(fetchFn: typeof fetch, url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetchFn(url, init);
  } catch (e) {
    throw new EngineError("CannotConnect", `${url}: ${(e as Error).message}`, { cause: e });
  }
}

async function body(url: string, res: Response): Promise<Uint8Array> {
  try {
    return new Uint8Array(await res.arrayBuffer());
  } catch (e) {
    throw new EngineError("CannotConnect", `${url}: ${(e as Error).message}`, { cause: e });
  }
}

async function drop(res: Response): Promise<void> {
  await res.body?.cancel().catch(() => {});
}

/** `Content-Length` when it is a whole number; undefined when absent or garbled. */
function contentLength(res: Response): number | undefined {
  const text = res.headers.get("content-length");
  const n = text === null || text.trim() === "" ? NaN : Number(text);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The total size of a `Content-Range` (`bytes 0-0/SIZE`, `bytes *\/SIZE`). */
function rangeTotal(res: Response): number | undefined {
  const m = /^bytes (?:\d+-\d+|\*)\/(\d+)$/.exec(res.headers.get("content-range")?.trim() ?? "");
  const n = m ? Number(m[1]) : NaN;
  return Number.isSafeInteger(n) ? n : undefined;
}

/** What HEAD's `Accept-Ranges` says: true (`bytes`), false (`none`), undefined (nothing). */
function acceptRanges(res: Response): boolean | undefined {
  const units = (res.headers.get("accept-ranges") ?? "").toLowerCase().split(",").map((u) =>
    u.trim()
  );
  return units.includes("bytes") ? true : units.includes("none") ? false : undefined;
}

/** One file over HTTP: Range reads, or one whole download when the server ignores Range. */
class UrlSource implements ByteSource {
  readonly #fetch: typeof fetch;
  /** true: Range is honoured; false: read whole; undefined: the first read decides. */
  #ranges: boolean | undefined;
  /** The first read's request, while it decides `#ranges` (the others wait on it). */
  #first: Promise<void> | undefined;
  /** The whole file: one download, shared. */
  #whole: Promise<Uint8Array> | undefined;

  constructor(
    readonly name: string,
    readonly size: number,
    fetchFn: typeof fetch,
    ranges: boolean | undefined,
    whole?: Uint8Array,
  ) {
    this.#fetch = fetchFn;
    this.#ranges = ranges;
    if (whole !== undefined) this.#whole = Promise.resolve(whole);
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    if (length <= 0) return new Uint8Array(0);
    if (this.#ranges === undefined) {
      if (this.#first !== undefined) {
        await this.#first;
        return await this.read(offset, length);
      }
      const first = this.#ranged(offset, length);
      // Settled (never rejected) once the answer is in, and cleared: after a failed first read
      // the next read asks again.
      this.#first = first.then(() => {}, () => {}).then(() => void (this.#first = undefined));
      return await first;
    }
    if (this.#ranges) return await this.#ranged(offset, length);
    this.#whole ??= this.#track(this.#download());
    return slice(await this.#whole, offset, length);
  }

  /** Drop the whole-file copy, if any (a later read downloads it again). */
  release(): void {
    this.#whole = undefined;
  }

  async #ranged(offset: number, length: number): Promise<Uint8Array> {
    const res = await send(this.#fetch, this.name, {
      headers: { range: `bytes=${offset}-${offset + length - 1}` },
    });
    if (res.status === 206) {
      const from = /^bytes (\d+)-/.exec(res.headers.get("content-range")?.trim() ?? "")?.[1];
      if (from !== undefined && Number(from) !== offset) {
        await drop(res);
        throw new EngineError(
          "CannotConnect",
          `${this.name}: asked for bytes from ${offset}, the server sent them from ${from}`,
        );
      }
      this.#ranges ??= true;
      return await body(this.name, res);
    }
    if (res.status !== 200) {
      await drop(res);
      throw httpError(this.name, res.status, res.statusText);
    }
    // The server ignores Range: this body is the whole file. Keep it, unless another read's
    // copy is already coming.
    this.#ranges = false;
    if (this.#whole === undefined) this.#whole = this.#track(this.#whole200(res));
    else await drop(res);
    return slice(await this.#whole, offset, length);
  }

  async #download(): Promise<Uint8Array> {
    const res = await send(this.#fetch, this.name, {});
    if (res.status === 200) return await this.#whole200(res);
    await drop(res);
    throw httpError(this.name, res.status, res.statusText);
  }

  async #whole200(res: Response): Promise<Uint8Array> {
    const bytes = await body(this.name, res);
    if (bytes.length !== this.size) {
      throw EngineError.invalidArgument(
        `${this.name}: the server sent ${bytes.length} bytes; it gave the size as ${this.size}`,
      );
    }
    return bytes;
  }

  /** `whole`, forgotten if it fails (so that the next read downloads again). */
  #track(whole: Promise<Uint8Array>): Promise<Uint8Array> {
    whole.catch(() => {
      if (this.#whole === whole) this.#whole = undefined;
    });
    return whole;
  }
}

/** A view of `length` bytes from `offset` (no copy: the caller must not write to it). */
function slice(whole: Uint8Array, offset: number, length: number): Uint8Array {
  return whole.subarray(offset, offset + length);
}

/**
 * The largest whole file a `bytes=0-0` probe keeps when the server answers it with the whole
 * file (200): small files (the JSON ones, read whole right after) are kept, so one request
 * brings them; a larger body is dropped, as the file may only be probed for.
 */
const KEEP_BODY = 16 * 1024 * 1024;

/** What opening a URL found: no file, an HTML page in its place, or the file. */
export type Opened = { kind: "missing" } | { kind: "html" } | { kind: "file"; source: ByteSource };
const MISSING: Opened = { kind: "missing" };
const HTML: Opened = { kind: "html" };

/** Open `url` (HEAD, or a one-byte probe): see the module's notes. */
export async function openUrl(url: string, fetchFn: typeof fetch): Promise<Opened> {
  const head = await send(fetchFn, url, { method: "HEAD" });
  if (head.status === 404) return MISSING;
  const refused = head.status === 405 || head.status === 501;
  if (!head.ok && !refused) throw httpError(url, head.status, head.statusText);
  if (head.ok && isHtmlType(head.headers)) return HTML;
  const size = head.ok ? contentLength(head) : undefined;
  if (size !== undefined && size > 0) {
    return { kind: "file", source: new UrlSource(url, size, fetchFn, acceptRanges(head)) };
  }
  return await probe(url, fetchFn);
}

/** The size from `GET` with `Range: bytes=0-0`, for a server whose HEAD gave none. */
async function probe(url: string, fetchFn: typeof fetch): Promise<Opened> {
  const res = await send(fetchFn, url, { headers: { range: "bytes=0-0" } });
  const file = (size: number, ranges: boolean, whole?: Uint8Array): Opened => ({
    kind: "file",
    source: new UrlSource(url, size, fetchFn, ranges, whole),
  });
  if (res.status === 206 && !isHtmlType(res.headers)) {
    await body(url, res);
    const total = rangeTotal(res);
    if (total === undefined) {
      throw new EngineError("CannotConnect", `${url}: the server sent no size (Content-Range)`);
    }
    return file(total, true);
  }
  if (res.status === 200 && !isHtmlType(res.headers)) {
    const length = contentLength(res);
    if (length !== undefined && length > KEEP_BODY) {
      await drop(res);
      return file(length, false);
    }
    const whole = await body(url, res);
    return file(whole.length, false, whole);
  }
  await drop(res);
  if (res.status === 404) return MISSING;
  if (res.status === 200 || res.status === 206) return HTML;
  // Unsatisfiable: only an empty file has no byte 0.
  if (res.status === 416 && rangeTotal(res) === 0) return file(0, true);
  throw httpError(url, res.status, res.statusText);
}

/**
 * A file over HTTP(S), read with Range requests, or downloaded once and sliced where the server
 * ignores Range (see the module's notes). Undefined on 404; an HTML page (an SPA fallback) is
 * an `InvalidArgument` saying so.
 */
export async function urlSource(
  url: string,
  fetchFn: typeof fetch = fetch,
): Promise<ByteSource | undefined> {
  const opened = await openUrl(url, fetchFn);
  if (opened.kind === "html") throw htmlPage(url);
  return opened.kind === "file" ? opened.source : undefined;
}

/**
 * A checkpoint laid out under a base URL (an HF repo's `resolve/main/`), or a GGUF file's URL
 * (one ending in `.gguf`; a split model's first split). A file the server answers with an HTML
 * page is absent (an SPA fallback's `index.html`: optional files are probed for), and
 * `describeMissing` says so when a required one is.
 */
export function urlFiles(base: string, fetchFn: typeof fetch = fetch): ModelFiles {
  const html = new Set<string>();
  const open = async (url: string): Promise<ByteSource | undefined> => {
    const opened = await openUrl(url, fetchFn);
    if (opened.kind === "html") html.add(url);
    return opened.kind === "file" ? opened.source : undefined;
  };
  const missing = (url: string) => html.has(url) ? htmlMessage(url) : `${url}: HTTP 404 Not Found`;
  const { location, gguf, at } = urlLayout(base);
  return {
    location,
    ...(gguf ? { gguf: location } : {}),
    open: (name) => open(at(name)),
    describeMissing: (name) => missing(at(name)),
  };
}

/**
 * How `urlFiles` lays out a checkpoint at `base`: a GGUF file's URL (its files named by their
 * URLs, `location` the URL itself) or a base directory (`location` ending in `/`, files named
 * relative to it); `at` gives a file's URL from its name.
 */
export function urlLayout(
  base: string,
): { location: string; gguf: boolean; at(name: string): string } {
  const gguf = new URL(base).pathname.endsWith(".gguf");
  const location = gguf || base.endsWith("/") ? base : `${base}/`;
  return { location, gguf, at: (name) => new URL(name, location).href };
}
