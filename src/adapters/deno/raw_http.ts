/**
 * HTTP/1.1 over a bare TCP connection, for sending what `fetch` will not: a `Host` header of
 * our choosing, no `Host` at all, a body one byte at a time, a connection closed mid-body.
 */

export interface RawResponse {
  status: number;
  headers: Headers;
  body: string;
  /** Milliseconds from the first byte sent to the end of the response. */
  ms: number;
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
