/**
 * HTTP/1.1 message framing (RFC 9112) of one connection, watched in both directions for
 * `http_front.ts`: where each request head ends (held back until whole, then handed on in one
 * piece), where each request body ends (`Content-Length` or chunked), and where each response ends
 * (`Content-Length`, chunked, none for `HEAD`, 1xx, 204 and 304, or the server's close). From that
 * it tells what the connection is doing: owed a request head, idle, or busy with a request. Bytes
 * in, pieces and events out; no I/O and no clock.
 *
 * It frames requests as strictly as Deno's own parser (hyper), or more: the heads hyper refuses
 * with 400 for ambiguous framing are refused here first (`Content-Length` with
 * `Transfer-Encoding`, a coding list not ending in chunked, differing or listed lengths, folded
 * lines), so that the front and the server agree on where each request ends.
 */

/** The longest request head held (request line, headers, blank line); a longer one gets 431. */
export const MAX_HEAD_BYTES = 64 * 1024;
/** The longest chunk-size line (the size and its extensions), and the most trailer bytes. */
export const MAX_CHUNK_LINE = 4096;

/**
 * What a connection is doing. `head`: no response is owed, and a request head is (the first one,
 * even before any byte of it; one partly sent; or the rest of a body whose answer did not wait for
 * it). `idle`: nothing is owed either way since the last response ended. `busy`: a request is being
 * answered (from its head's end to its response's end).
 */
export type ConnectionState = "head" | "idle" | "busy";

/** What the framing saw, in order. */
export type FramingEvent =
  | { type: "request"; method: string; target: string }
  | { type: "request-end" }
  | { type: "response"; status: number }
  | { type: "response-end" }
  | { type: "error"; side: "request" | "response"; status: number; message: string };

/** Bytes that cannot be framed; for a request, `status` is the answer owed (400, 431, 501, 505). */
export class FramingError extends Error {
  override readonly name = "FramingError";

  constructor(readonly status: number, message: string) {
    super(message);
  }
}

const LF = 0x0a;
const latin1 = new TextDecoder("latin1");
/** A token (RFC 9110 §5.6.2): a method or a field name. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** A message head gathered across feeds: its bytes and its lines (line ends dropped). */
class Head {
  #bytes = new Uint8Array(512);
  #length = 0;
  #lineStart = 0;
  /** The start line, then the field lines. */
  lines: string[] = [];

  constructor(readonly max: number) {}

  /** Bytes gathered so far. */
  get length(): number {
    return this.#length;
  }

  /** Takes bytes from `at` up to the blank line: the offset after it, or -1 if the head goes on. */
  feed(chunk: Uint8Array, at: number): number {
    let i = at;
    while (i < chunk.length) {
      const lf = chunk.indexOf(LF, i);
      const end = lf < 0 ? chunk.length : lf + 1;
      this.#append(chunk.subarray(i, end));
      i = end;
      if (lf < 0) return -1;
      const line = latin1.decode(this.#bytes.subarray(this.#lineStart, this.#length - 1));
      this.#lineStart = this.#length;
      const text = line.endsWith("\r") ? line.slice(0, -1) : line;
      if (text !== "") this.lines.push(text);
      // Empty lines before the start line are skipped (RFC 9112 §2.2), as hyper skips them.
      else if (this.lines.length > 0) return i;
    }
    return -1;
  }

  /** The head's bytes (a copy), and a fresh start for the next one. */
  take(): Uint8Array {
    const bytes = this.#bytes.slice(0, this.#length);
    this.#length = this.#lineStart = 0;
    this.lines = [];
    return bytes;
  }

  #append(b: Uint8Array): void {
    const need = this.#length + b.length;
    if (need > this.max) {
      throw new FramingError(431, `the request head is over ${this.max} bytes`);
    }
    if (need > this.#bytes.length) {
      const grown = new Uint8Array(Math.min(this.max, Math.max(need, this.#bytes.length * 2)));
      grown.set(this.#bytes.subarray(0, this.#length));
      this.#bytes = grown;
    }
    this.#bytes.set(b, this.#length);
    this.#length = need;
  }
}

/** A line (without its line end) gathered across feeds, at most `max` bytes. */
class Line {
  #parts: Uint8Array[] = [];
  #length = 0;

  /** The line and the offset after its LF, or undefined (all of `chunk` taken) if it goes on. */
  take(chunk: Uint8Array, at: number, max: number): [string, number] | undefined {
    const lf = chunk.indexOf(LF, at);
    const end = lf < 0 ? chunk.length : lf;
    this.#length += end - at;
    if (this.#length > max) throw new FramingError(400, `a chunked body line is over ${max} bytes`);
    this.#parts.push(chunk.slice(at, end));
    if (lf < 0) return undefined;
    const text = this.#parts.map((p) => latin1.decode(p)).join("");
    this.#parts = [];
    this.#length = 0;
    return [text.endsWith("\r") ? text.slice(0, -1) : text, lf + 1];
  }
}

/** A chunked body (RFC 9112 §7.1): sizes with optional extensions, data, last chunk, trailers. */
class Chunked {
  #phase: "size" | "data" | "data-end" | "trailers" = "size";
  #left = 0;
  #trailerBytes = 0;
  readonly #line = new Line();

  /** Takes bytes from `at`: the offset after the body's end, or -1 if it goes on. */
  feed(chunk: Uint8Array, at: number): number {
    let i = at;
    while (i < chunk.length) {
      if (this.#phase === "data") {
        const n = Math.min(this.#left, chunk.length - i);
        this.#left -= n;
        i += n;
        if (this.#left === 0) this.#phase = "data-end";
        continue;
      }
      const taken = this.#line.take(chunk, i, MAX_CHUNK_LINE);
      if (taken === undefined) return -1;
      const [line, next] = taken;
      i = next;
      if (this.#phase === "size") {
        const size = /^([0-9A-Fa-f]{1,12})[ \t]*(?:;.*)?$/.exec(line)?.[1];
        if (size === undefined) throw new FramingError(400, "a chunk size line is malformed");
        this.#left = parseInt(size, 16);
        this.#phase = this.#left === 0 ? "trailers" : "data";
      } else if (this.#phase === "data-end") {
        if (line !== "") throw new FramingError(400, "a chunk's data is not followed by CRLF");
        this.#phase = "size";
      } else {
        if (line === "") return i;
        this.#trailerBytes += line.length;
        if (this.#trailerBytes > MAX_CHUNK_LINE) {
          throw new FramingError(400, `the trailers are over ${MAX_CHUNK_LINE} bytes`);
        }
      }
    }
    return -1;
  }
}

/** How a body ends: `close` only for responses (the server's close ends it). */
type Body =
  | { kind: "none" }
  | { kind: "length"; left: number }
  | { kind: "chunked"; chunked: Chunked }
  | { kind: "close" };

/** Takes body bytes from `at`: the offset after the body's end, or -1 if it goes on. */
function feedBody(body: Body, chunk: Uint8Array, at: number): number {
  switch (body.kind) {
    case "none":
      return at;
    case "close":
      return -1;
    case "length": {
      const n = Math.min(body.left, chunk.length - at);
      body.left -= n;
      return body.left === 0 ? at + n : -1;
    }
    case "chunked":
      return body.chunked.feed(chunk, at);
  }
}

/** Field lines as lower-case names to their values; 400 for a folded or malformed line. */
function fields(lines: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of lines) {
    if (line[0] === " " || line[0] === "\t") {
      throw new FramingError(400, "obsolete line folding in the request head");
    }
    const colon = line.indexOf(":");
    const name = line.slice(0, colon).toLowerCase();
    if (colon < 1 || !TOKEN.test(name)) throw new FramingError(400, "a malformed header line");
    const value = line.slice(colon + 1).trim();
    out.set(name, [...(out.get(name) ?? []), value]);
  }
  return out;
}

/** A transfer-coding list's codings, lower case. */
const codings = (values: readonly string[]) =>
  values.join(",").split(",").map((c) => c.trim().toLowerCase()).filter((c) => c !== "");

/** A request head's method, target and body framing (RFC 9112 §6.3); throws `FramingError`. */
function requestHead(lines: readonly string[]): { method: string; target: string; body: Body } {
  const [start = "", ...rest] = lines;
  const m = /^(\S+) (\S+) HTTP\/(\d)\.(\d)$/.exec(start);
  if (!m || !TOKEN.test(m[1]!)) throw new FramingError(400, "a malformed request line");
  const [, method = "", target = "", major, minor] = m;
  if (major !== "1") {
    throw new FramingError(505, `HTTP/${major}.${minor} is not served here, only HTTP/1.1`);
  }
  if (method === "CONNECT") throw new FramingError(501, "CONNECT is not served here");
  const h = fields(rest);
  const te = h.get("transfer-encoding");
  const cl = h.get("content-length");
  if (te !== undefined) {
    if (minor === "0") throw new FramingError(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (cl !== undefined) {
      throw new FramingError(400, "both Content-Length and Transfer-Encoding");
    }
    if (codings(te).at(-1) !== "chunked") {
      throw new FramingError(400, "a Transfer-Encoding that does not end in chunked");
    }
    return { method, target, body: { kind: "chunked", chunked: new Chunked() } };
  }
  if (cl === undefined) return { method, target, body: { kind: "none" } };
  const length = cl[0]!;
  if (!cl.every((v) => v === length) || !/^\d{1,15}$/.test(length)) {
    throw new FramingError(400, "a malformed or repeated Content-Length");
  }
  const left = Number(length);
  return { method, target, body: left === 0 ? { kind: "none" } : { kind: "length", left } };
}

/** A response's status and body framing; `toHead`: it answers a HEAD request. */
function responseHead(lines: readonly string[], toHead: boolean): { status: number; body: Body } {
  const [start = "", ...rest] = lines;
  const code = /^HTTP\/1\.\d (\d{3})(?: |$)/.exec(start)?.[1];
  if (code === undefined) throw new FramingError(502, "a malformed status line from the server");
  const status = Number(code);
  if (status < 200 || status === 204 || status === 304 || toHead) {
    return { status, body: { kind: "none" } };
  }
  const h = fields(rest);
  const te = h.get("transfer-encoding");
  if (te !== undefined) {
    const chunked = codings(te).at(-1) === "chunked";
    return {
      status,
      body: chunked ? { kind: "chunked", chunked: new Chunked() } : { kind: "close" },
    };
  }
  const cl = h.get("content-length")?.[0];
  if (cl === undefined) return { status, body: { kind: "close" } };
  if (!/^\d{1,15}$/.test(cl)) {
    throw new FramingError(502, "a malformed Content-Length from the server");
  }
  const left = Number(cl);
  return { status, body: left === 0 ? { kind: "none" } : { kind: "length", left } };
}

/** One HTTP/1.1 connection's framing: feed it the client's bytes and the server's, in order. */
export class Http1Framing {
  readonly #onEvent: (e: FramingEvent) => void;
  #requests = 0;
  /** One entry per request head seen whole and not yet answered: whether it is a `HEAD`. */
  #owed: boolean[] = [];
  readonly #reqHead = new Head(MAX_HEAD_BYTES);
  #reqBody: Body | undefined;
  readonly #resHead = new Head(Infinity);
  #resBody: Body | undefined;
  #error: Extract<FramingEvent, { type: "error" }> | undefined;

  constructor(onEvent: (e: FramingEvent) => void = () => {}) {
    this.#onEvent = onEvent;
  }

  /** What the connection is doing (see `ConnectionState`). */
  get state(): ConnectionState {
    if (this.#owed.length > 0 || this.#resHead.length > 0 || this.#resBody) return "busy";
    if (this.#requests === 0 || this.#reqHead.length > 0 || this.#reqBody) return "head";
    return "idle";
  }

  /** Whether some bytes of a request head came and the head is not whole yet. */
  get partialHead(): boolean {
    return this.#reqBody === undefined && this.#reqHead.length > 0;
  }

  /** The first framing error, on either side; after it, nothing more is framed. */
  get error(): Extract<FramingEvent, { type: "error" }> | undefined {
    return this.#error;
  }

  /**
   * The client's bytes; returns what to hand the server, in order: each request head whole (a
   * copy, once its blank line came) and body bytes (views of `bytes`). A head that cannot be
   * framed is not handed on; after a body that cannot be, the rest of `bytes` is (the server
   * refuses it itself).
   */
  request(bytes: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = [];
    let i = 0;
    while (!this.#error && i < bytes.length) {
      const body = this.#reqBody;
      try {
        if (body === undefined) {
          const end = this.#reqHead.feed(bytes, i);
          if (end < 0) break;
          i = end;
          const head = requestHead(this.#reqHead.lines);
          out.push(this.#reqHead.take());
          this.#requests++;
          this.#owed.push(head.method === "HEAD");
          this.#emit({ type: "request", method: head.method, target: head.target });
          if (head.body.kind === "none") this.#emit({ type: "request-end" });
          else this.#reqBody = head.body;
        } else {
          const end = feedBody(body, bytes, i);
          out.push(bytes.subarray(i, end < 0 ? bytes.length : end));
          if (end < 0) break;
          i = end;
          this.#reqBody = undefined;
          this.#emit({ type: "request-end" });
        }
      } catch (e) {
        if (!(e instanceof FramingError)) throw e;
        if (body !== undefined) out.push(bytes.subarray(i));
        this.#fail("request", e);
      }
    }
    return out.filter((p) => p.length > 0);
  }

  /** The server's bytes (handed to the client as they are). */
  response(bytes: Uint8Array): void {
    let i = 0;
    while (!this.#error && i < bytes.length) {
      try {
        if (this.#resBody === undefined) {
          const end = this.#resHead.feed(bytes, i);
          if (end < 0) break;
          i = end;
          const { status, body } = responseHead(this.#resHead.lines, this.#owed[0] ?? false);
          this.#resHead.take();
          this.#emit({ type: "response", status });
          if (status === 101) throw new FramingError(502, "the server switched protocols");
          if (status < 200) continue; // interim: the final response follows
          if (body.kind === "none") this.#endResponse();
          else this.#resBody = body;
        } else {
          const end = feedBody(this.#resBody, bytes, i);
          if (end < 0) break;
          i = end;
          this.#endResponse();
        }
      } catch (e) {
        if (!(e instanceof FramingError)) throw e;
        this.#fail("response", e);
      }
    }
  }

  /** The server closed its side: a response read until the close ends here. */
  responseClosed(): void {
    if (this.#resBody?.kind === "close") this.#endResponse();
  }

  #endResponse(): void {
    this.#resBody = undefined;
    this.#owed.shift();
    this.#emit({ type: "response-end" });
  }

  #fail(side: "request" | "response", e: FramingError): void {
    this.#error = { type: "error", side, status: e.status, message: e.message };
    this.#emit(this.#error);
  }

  #emit(e: FramingEvent): void {
    this.#onEvent(e);
  }
}
