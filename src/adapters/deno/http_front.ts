/**
 * A TCP front for `Deno.serve`, which has no deadline for a request head nor for an idle
 * keep-alive connection (hyper underneath has none set, and `Deno.serve` takes no option for
 * them): a client that connects and sends nothing, or trickles a head a byte at a time, would hold
 * its connection forever. The front listens on the public address and relays each connection,
 * byte for byte, to a `Deno.serve` on an ephemeral loopback port (a TCP one rather than a Unix
 * socket: there Deno builds `Request.url` as `http+unix://`, which parses differently), watching
 * both directions with `Http1Framing`. It closes a connection whose request head is not whole
 * within `headerTimeoutMs` of its first byte (of the accept, for the first request; 408 when some
 * of it came), or that is idle past `idleTimeoutMs` after a response ended. A request being
 * answered is never timed here, however long its response takes between chunks; its body is the
 * app's (`--body-timeout`). The server sees the client's bytes unchanged, `Host` included.
 *
 * HTTP/1.1 only: an HTTP/2 preface gets 505, `CONNECT` 501, a head the framing refuses 400 or
 * 431, each with `Connection: close`; a switch of protocols (never made by Kiln) closes.
 */
import { HttpError } from "../../server/errors.ts";
import { type ConnectionState, Http1Framing } from "./http_framing.ts";

/** Where to listen and the two deadlines. */
export interface FrontOptions {
  /** The address to listen on. */
  hostname: string;
  /** The port, 0 for a free one. */
  port: number;
  /** A request head must be whole this long after its first byte (the accept, for the first). */
  headerTimeoutMs: number;
  /** A connection with nothing in flight is closed this long after its last response ended. */
  idleTimeoutMs: number;
  /** Called once listening, with the public address. */
  onListen?: (addr: Deno.NetAddr) => void;
}

/** A running front. */
export interface HttpFront {
  /** The public address (the real port when `port` was 0). */
  readonly addr: Deno.NetAddr;
  /** Stops accepting, lets responses in flight finish (`Deno.serve`'s shutdown), closes the rest. */
  shutdown(): Promise<void>;
}

/**
 * Bytes read at a time in each direction: two such buffers live as long as the connection, and
 * streamed tokens and request bodies (at most 1 MiB) are small.
 */
const CHUNK = 16 * 1024;
/**
 * How long a connection is still read (and what comes discarded) after the front's last bytes
 * and FIN, so that the client reads the answer before the close instead of a reset.
 */
const LINGER_MS = 2000;

const REASONS: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
  501: "Not Implemented",
  505: "HTTP Version Not Supported",
};

/** A whole HTTP/1.1 response carrying `e` as JSON, with `Connection: close`. */
function closingAnswer(e: HttpError): Uint8Array {
  const body = new TextEncoder().encode(JSON.stringify(e.body()));
  const head = new TextEncoder().encode(
    `HTTP/1.1 ${e.status} ${REASONS[e.status] ?? "Error"}\r\n` +
      `content-type: application/json\r\ncontent-length: ${body.length}\r\n` +
      `connection: close\r\n\r\n`,
  );
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let done = 0; done < bytes.length;) done += await conn.write(bytes.subarray(done));
}

/** One client connection relayed to the inner server. */
class Relay {
  readonly #client: Deno.TcpConn;
  #inner: Deno.TcpConn | undefined;
  readonly #o: FrontOptions;
  readonly #framing = new Http1Framing();
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The state the timer runs for; a new clock starts only when the state changes. */
  #clock: ConnectionState | "none" = "none";
  /** Writes to the client, in order. */
  #writing: Promise<void> = Promise.resolve();
  /** The relay is over: the front's answer (if any) is written, the client is being let go. */
  #closing = false;
  #clientClosed = false;
  /** The client sent FIN: nothing more will come from it. */
  #clientEnded = false;
  /** Set once the front's last bytes and FIN are out: the client's FIN then ends the relay. */
  #linger: ReturnType<typeof setTimeout> | undefined;

  constructor(client: Deno.TcpConn, o: FrontOptions) {
    this.#client = client;
    this.#o = o;
    client.setNoDelay(true);
  }

  /** Connects to the inner server and relays both ways until the connection is over. */
  async run(innerPort: number): Promise<void> {
    this.#tick(); // the first head's clock starts at the accept
    try {
      const inner = await Deno.connect({ hostname: "127.0.0.1", port: innerPort });
      inner.setNoDelay(true);
      this.#inner = inner;
    } catch {
      return this.abort();
    }
    if (this.#closing) return this.abort(); // shut while connecting
    await Promise.all([this.#up(this.#inner), this.#down(this.#inner)]);
  }

  /** Closes both sides now. */
  abort(): void {
    this.#closing = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#linger);
    this.#closeInner();
    if (!this.#clientClosed) {
      this.#clientClosed = true;
      try {
        this.#client.close();
      } catch { /* closed already */ }
    }
  }

  /** Client to server: heads once whole, body bytes as they come. */
  async #up(inner: Deno.TcpConn): Promise<void> {
    const buf = new Uint8Array(CHUNK);
    for (;;) {
      const n = await this.#client.read(buf).catch(() => undefined);
      if (n === undefined) return this.abort(); // reset
      if (n === null) return this.#ended();
      if (this.#closing || this.#framing.error) continue; // discarded
      const pieces = this.#framing.request(buf.subarray(0, n));
      this.#tick(); // before the writes, which wait while the server reads nothing
      try {
        for (const piece of pieces) await writeAll(inner, piece);
      } catch {
        if (!this.#closing) this.abort();
      }
    }
  }

  /** Server to client, as it comes. */
  async #down(inner: Deno.TcpConn): Promise<void> {
    const buf = new Uint8Array(CHUNK);
    for (;;) {
      const n = await inner.read(buf).catch(() => undefined);
      if (this.#closing) return;
      if (n === undefined) return this.abort();
      if (n === null) {
        // The server closed: a response read until the close ends; the client is let go.
        this.#framing.responseClosed();
        return this.#shut();
      }
      this.#framing.response(buf.subarray(0, n));
      if (this.#framing.error?.side === "response") return this.abort();
      const bytes = buf.subarray(0, n);
      this.#writing = this.#writing.then(() => writeAll(this.#client, bytes));
      try {
        await this.#writing;
      } catch {
        return this.abort(); // the client went away: the server sees its connection close
      }
      this.#tick();
    }
  }

  /** After any change: answer a refused head, or (re)start the clock for the new state. */
  #tick(): void {
    if (this.#closing) return;
    const state = this.#framing.state;
    const error = this.#framing.error;
    if (error && state !== "busy") {
      const type = "invalid_request_error";
      return void this.#shut(new HttpError(error.status, error.message, type));
    }
    if (state === this.#clock) return;
    clearTimeout(this.#timer);
    this.#clock = state;
    if (state === "busy") return;
    const ms = state === "head" ? this.#o.headerTimeoutMs : this.#o.idleTimeoutMs;
    this.#timer = setTimeout(() => this.#timeout(ms), ms);
  }

  /** A head not whole in time gets 408; a client that sent no head is let go without one. */
  #timeout(ms: number): void {
    if (this.#framing.state === "busy") return;
    const answer = this.#framing.partialHead
      ? new HttpError(408, `request head not received within ${ms} ms`, "timeout_error")
      : undefined;
    void this.#shut(answer);
  }

  /** The client sent FIN. */
  #ended(): void {
    this.#clientEnded = true;
    if (this.#linger !== undefined) return this.abort(); // it read our answer and closed
    if (this.#closing) return; // `#shut` closes once its answer is out
    // A request in flight: the server sees the half close, as it would without the front.
    if (this.#framing.state === "busy") void this.#inner?.closeWrite().catch(() => {});
    else this.abort();
  }

  /** Ends the relay with nothing in flight: the server's side closes, the client gets `answer`. */
  async #shut(answer?: HttpError): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    clearTimeout(this.#timer);
    this.#closeInner();
    try {
      await this.#writing;
      if (answer) await writeAll(this.#client, closingAnswer(answer));
      if (this.#clientEnded) return this.abort();
      await this.#client.closeWrite();
    } catch {
      return this.abort();
    }
    // Read on (discarding) until the client's FIN, for a while.
    this.#linger = setTimeout(() => this.abort(), LINGER_MS);
  }

  #closeInner(): void {
    try {
      this.#inner?.close();
    } catch { /* closed already */ }
    this.#inner = undefined;
  }
}

/**
 * Serves `handler` behind the front: a `Deno.serve` on a free loopback port, and a listener on
 * `o.hostname:o.port` relaying to it. Throws as `Deno.listen` does (the port taken).
 */
export function serveFront(o: FrontOptions, handler: Deno.ServeHandler): HttpFront {
  const listener = Deno.listen({ hostname: o.hostname, port: o.port });
  const inner = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  const relays = new Set<Relay>();
  let closed = false;
  const accepting = (async () => {
    while (!closed) {
      let conn: Deno.TcpConn;
      try {
        conn = await listener.accept();
      } catch {
        // Closed, or out of file descriptors for now: accept again a little later.
        if (!closed) await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      const relay = new Relay(conn, o);
      relays.add(relay);
      relay.run(inner.addr.port).catch(() => relay.abort()).finally(() => relays.delete(relay));
    }
  })();
  o.onListen?.(listener.addr);
  return {
    addr: listener.addr,
    async shutdown() {
      closed = true;
      try {
        listener.close();
      } catch { /* closed already */ }
      await accepting;
      await inner.shutdown();
      for (const relay of relays) relay.abort();
    },
  };
}
