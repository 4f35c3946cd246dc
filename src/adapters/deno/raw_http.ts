/**
 * HTTP/1.1 over a bare TCP connection, for sending what `fetch` will not: a `Host` header of
 * our choosing, no `Host` at all, a body one byte at a time, a connection closed mid-body; and
 * (`RawConnection`) a connection kept open across requests, to time when the server closes it.
 */

export interface RawResponse {
  status: number;
  headers: Headers;
  body: string;
  /** Milliseconds from the first byte sent to the end of the response. */
  ms: number;
  /** `RawConnection`: the longest wait, in milliseconds, between two reads of its bytes. */
  gapMs?: number;
}

export interface RawOptions {
  /** Body bytes sent after the head, in pieces with `pauseMs` between them. */
  pieces?: Uint8Array[];
  pauseMs?: number;
  /** Give up (and close) after this many milliseconds (default 10 s). */
  timeoutMs?: number;
  /** Close the connection after sending, without reading. */
  closeAfterSend?: boolean;
}

const enc = new TextEncoder();

/** Send `head` (the request line and headers, CRLF-separated, without the blank line). */
export async function rawRequest(
  base: URL,
  head: string[],
  o: RawOptions = {},
): Promise<RawResponse | undefined> {
  const t0 = performance.now();
  const conn = await Deno.connect({
    hostname: base.hostname.replace(/^\[|\]$/g, ""),
    port: Number(base.port || 80),
  });
  const timer = setTimeout(() => close(), o.timeoutMs ?? 10_000);
  let closed = false;
  const close = () => {
    if (!closed) conn.close();
    closed = true;
  };
  const reading = readResponse(conn).catch(() => undefined);
  try {
    await conn.write(enc.encode(`${head.join("\r\n")}\r\n\r\n`));
    for (const p of o.pieces ?? []) {
      if (o.pauseMs) await new Promise((r) => setTimeout(r, o.pauseMs));
      if (closed) break;
      await conn.write(p);
    }
  } catch {
    // the server closed first (it may have answered already)
  }
  if (o.closeAfterSend) {
    clearTimeout(timer);
    close();
    await reading;
    return undefined;
  }
  const res = await reading;
  clearTimeout(timer);
  close();
  return res && { ...res, ms: performance.now() - t0 };
}

async function readResponse(conn: Deno.Conn): Promise<Omit<RawResponse, "ms"> | undefined> {
  let buf = new Uint8Array(0);
  const chunk = new Uint8Array(65536);
  const more = async () => {
    const n = await conn.read(chunk);
    if (n === null) return false;
    const next = new Uint8Array(buf.length + n);
    next.set(buf);
    next.set(chunk.subarray(0, n), buf.length);
    buf = next;
    return true;
  };
  const text = () => new TextDecoder().decode(buf);
  while (!text().includes("\r\n\r\n")) if (!(await more())) return undefined;
  const [head = "", ...rest] = text().split("\r\n\r\n");
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers = new Headers();
  for (const l of lines) {
    const i = l.indexOf(":");
    if (i > 0) headers.append(l.slice(0, i).trim(), l.slice(i + 1).trim());
  }
  const status = Number(statusLine.split(" ")[1]);
  const headBytes = enc.encode(`${head}\r\n\r\n`).length;
  const length = headers.get("content-length");
  if (length !== null) {
    while (buf.length - headBytes < Number(length)) if (!(await more())) break;
    return { status, headers, body: new TextDecoder().decode(buf.subarray(headBytes)) };
  }
  if (headers.get("transfer-encoding")?.includes("chunked")) {
    while (!text().endsWith("0\r\n\r\n")) if (!(await more())) break;
    return { status, headers, body: rest.join("\r\n\r\n") };
  }
  while (await more());
  return { status, headers, body: new TextDecoder().decode(buf.subarray(headBytes)) };
}

/**
 * One connection kept open across requests: what is sent goes as given (a head a byte at a time,
 * pipelined requests), and what comes back is read as it comes, response by response.
 */
export class RawConnection {
  readonly #conn: Deno.Conn;
  #buf = new Uint8Array(0);
  #eof = false;
  /** When bytes last came, and the longest wait between two reads that brought some. */
  #lastRead = 0;
  #gap = 0;
  /** When the connection was opened (`performance.now()`). */
  readonly openedAt: number;

  private constructor(conn: Deno.Conn) {
    this.#conn = conn;
    this.openedAt = performance.now();
  }

  /** Connects to `base`'s host and port. */
  static async open(base: URL): Promise<RawConnection> {
    return new RawConnection(
      await Deno.connect({
        hostname: base.hostname.replace(/^\[|\]$/g, ""),
        port: Number(base.port || 80),
      }),
    );
  }

  /** Sends `data`; false if the server has closed (or reset) the connection. */
  async send(data: string | Uint8Array): Promise<boolean> {
    try {
      const bytes = typeof data === "string" ? enc.encode(data) : data;
      for (let done = 0; done < bytes.length;) done += await this.#conn.write(bytes.subarray(done));
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The next whole response (by `Content-Length`, chunked, or until the close; none for a 1xx,
   * 204 or 304, or when `head` says it answers a HEAD); undefined if the connection ends first.
   * `ms`: from the call to its end.
   */
  async response(head = false): Promise<RawResponse | undefined> {
    const t0 = performance.now();
    const end = await this.#until((b) => find(b, "\r\n\r\n"));
    if (end < 0) return undefined;
    this.#gap = 0;
    const [statusLine = "", ...lines] = new TextDecoder().decode(this.#take(end + 4)).split("\r\n");
    const headers = new Headers();
    for (const l of lines) {
      const i = l.indexOf(":");
      if (i > 0) headers.append(l.slice(0, i).trim(), l.slice(i + 1).trim());
    }
    const status = Number(statusLine.split(" ")[1]);
    const length = headers.get("content-length");
    let body = "";
    if (head || status < 200 || status === 204 || status === 304) {
      // no body
    } else if (headers.get("transfer-encoding")?.includes("chunked")) {
      for (;;) {
        const line = await this.#until((b) => find(b, "\r\n"));
        if (line < 0) return undefined;
        const size = parseInt(new TextDecoder().decode(this.#take(line + 2)), 16);
        if (size === 0) {
          if (await this.#until((b) => find(b, "\r\n")) < 0) return undefined;
          this.#take(2); // no trailers from Deno
          break;
        }
        if (await this.#until((b) => (b.length >= size + 2 ? size : -1)) < 0) return undefined;
        body += new TextDecoder().decode(this.#take(size + 2).subarray(0, size));
      }
    } else if (length !== null) {
      const n = Number(length);
      if (await this.#until((b) => (b.length >= n ? n : -1)) < 0) return undefined;
      body = new TextDecoder().decode(this.#take(n));
    } else {
      await this.#until(() => -1);
      body = new TextDecoder().decode(this.#take(this.#buf.length));
    }
    return { status, headers, body, ms: performance.now() - t0, gapMs: this.#gap };
  }

  /**
   * Reads until the server closes (or resets) the connection or `timeoutMs` passes; returns what
   * came and the milliseconds since the connection was opened, or undefined on the timeout.
   */
  async closed(timeoutMs = 10_000): Promise<{ ms: number; text: string } | undefined> {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      this.close();
    }, timeoutMs);
    await this.#until(() => -1);
    clearTimeout(timer);
    const ms = performance.now() - this.openedAt;
    const text = new TextDecoder().decode(this.#take(this.#buf.length));
    return timedOut ? undefined : { ms, text };
  }

  /** Closes our side. */
  close(): void {
    try {
      this.#conn.close();
    } catch {
      // closed already
    }
  }

  /** Reads until `at(buffer)` is not negative (returned) or the connection ends (-1). */
  async #until(at: (b: Uint8Array) => number): Promise<number> {
    const chunk = new Uint8Array(65536);
    for (;;) {
      const i = at(this.#buf);
      if (i >= 0 || this.#eof) return i;
      const n = await this.#conn.read(chunk).catch(() => null);
      if (n === null) {
        this.#eof = true;
        continue;
      }
      const now = performance.now();
      if (this.#lastRead > 0) this.#gap = Math.max(this.#gap, now - this.#lastRead);
      this.#lastRead = now;
      const next = new Uint8Array(this.#buf.length + n);
      next.set(this.#buf);
      next.set(chunk.subarray(0, n), this.#buf.length);
      this.#buf = next;
    }
  }

  #take(n: number): Uint8Array {
    const out = this.#buf.subarray(0, n);
    this.#buf = this.#buf.subarray(n);
    return out;
  }
}

/** Where `text` (ASCII) first occurs in `b`, or -1. */
function find(b: Uint8Array, text: string): number {
  const t = enc.encode(text);
  outer: for (let i = 0; i + t.length <= b.length; i++) {
    for (let j = 0; j < t.length; j++) if (b[i + j] !== t[j]) continue outer;
    return i;
  }
  return -1;
}
