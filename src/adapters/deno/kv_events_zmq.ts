/**
 * `serve --kv-events ENDPOINT`: KV events on a ZMQ PUB socket in vLLM's framing and one of its
 * payload encodings (`--kv-events-encoding`, see `contract/kv_events_msgpack.ts`), for Dynamo's
 * KV router (its `ZmqSource`) or any subscriber, with vLLM's replay socket (`--kv-events-replay ENDPOINT`, a ROUTER): a subscriber that missed
 * sequence numbers sends the first one it lacks as 8 bytes big-endian and gets every buffered
 * batch from there, each as `[seq, payload]`, then `[-1, ""]`.
 *
 * Events that arrive in the same turn of the event loop go out as one batch; sequence numbers
 * count batches from 0 with no gap. Both sockets bind (subscribers connect); an endpoint that
 * cannot bind is an `InvalidArgument` naming it. zeromq is a native module: this file is the
 * only one that loads it.
 *
 * @module
 */
import * as zmq from "zeromq";
import { EngineError } from "../../contract/errors.ts";
import type { KvCacheEvent, KvEventPublisher } from "../../contract/kv_events.ts";
import { encodeKvBatch, type KvEventEncoding, seqFrame } from "../../contract/kv_events_msgpack.ts";

/** Settings of a {@linkcode ZmqKvPublisher}. */
export interface ZmqKvOptions {
  /** The PUB socket's endpoint, e.g. `tcp://127.0.0.1:5557` (`tcp://127.0.0.1:*`: any port). */
  endpoint: string;
  /** The ROUTER socket answering replay requests (none when absent). */
  replayEndpoint?: string;
  /** The topic frame (default empty, as vLLM's). */
  topic?: string;
  /** The data-parallel rank in every batch (default 0). */
  dpRank?: number;
  /** Batches kept for replay (default 10,000, as vLLM's). */
  bufferSteps?: number;
  /**
   * The payload's encoding (default `positional`; `map` and `map-events` are vLLM's map-encoded
   * forms, see `contract/kv_events_msgpack.ts`).
   */
  encoding?: KvEventEncoding;
}

/** The END marker a replay ends with: sequence -1. */
const END = seqFrame(-1n);

/** A {@linkcode KvEventPublisher} on a bound ZMQ PUB socket (and a replay ROUTER), as vLLM's. */
export class ZmqKvPublisher implements KvEventPublisher {
  readonly #pub: zmq.Publisher;
  readonly #replay: zmq.Router | undefined;
  readonly #topic: Uint8Array;
  readonly #dpRank: number;
  readonly #bufferSteps: number;
  readonly #encoding: KvEventEncoding;
  readonly #buffer: { seq: bigint; payload: Uint8Array }[] = [];
  #pending: KvCacheEvent[] = [];
  #seq = 0n;
  #sending: Promise<void> = Promise.resolve();
  #closed = false;
  /** Events and batches sent so far. */
  readonly sent = { events: 0, batches: 0 };

  private constructor(pub: zmq.Publisher, replay: zmq.Router | undefined, o: ZmqKvOptions) {
    this.#pub = pub;
    this.#replay = replay;
    this.#topic = new TextEncoder().encode(o.topic ?? "");
    this.#dpRank = o.dpRank ?? 0;
    this.#bufferSteps = o.bufferSteps ?? 10_000;
    this.#encoding = o.encoding ?? "positional";
    if (replay) void this.#serveReplay(replay);
  }

  /** Bind the sockets; `InvalidArgument` naming the endpoint that cannot bind. */
  static async bind(o: ZmqKvOptions): Promise<ZmqKvPublisher> {
    const pub = new zmq.Publisher({ sendHighWaterMark: 100_000 });
    let replay: zmq.Router | undefined;
    try {
      await bindTo(pub, o.endpoint, "--kv-events");
      if (o.replayEndpoint !== undefined) {
        replay = new zmq.Router();
        await bindTo(replay, o.replayEndpoint, "--kv-events-replay");
      }
    } catch (e) {
      pub.close();
      replay?.close();
      throw e;
    }
    return new ZmqKvPublisher(pub, replay, o);
  }

  /** The endpoints bound, with the ports chosen for `*`. */
  get endpoints(): { pub: string; replay: string | undefined } {
    return { pub: this.#pub.lastEndpoint ?? "", replay: this.#replay?.lastEndpoint ?? undefined };
  }

  /** Queue `event`; the turn's events go out together as the next batch. */
  publish(event: KvCacheEvent): void {
    if (this.#closed) return;
    if (this.#pending.length === 0) setTimeout(() => this.#flush(), 0);
    this.#pending.push(event);
  }

  #flush(): void {
    const events = this.#pending;
    this.#pending = [];
    if (events.length === 0 || this.#closed) return;
    const seq = this.#seq++;
    const payload = encodeKvBatch(Date.now() / 1000, events, this.#dpRank, this.#encoding);
    this.#buffer.push({ seq, payload });
    if (this.#buffer.length > this.#bufferSteps) this.#buffer.shift();
    this.sent.events += events.length;
    this.sent.batches++;
    // One send at a time (zeromq's rule); a PUB socket drops at its high-water mark, never waits.
    this.#sending = this.#sending.then(() => this.#pub.send([this.#topic, seqFrame(seq), payload]))
      .catch(() => {});
  }

  /**
   * Answer replay requests. Under Deno the socket's readiness is not always signalled again for
   * a second request that arrives with the first (it waited for unrelated activity), so the
   * socket is polled: a receive that finds nothing returns at once, and the next comes 50 ms
   * later.
   */
  async #serveReplay(router: zmq.Router): Promise<void> {
    router.receiveTimeout = 0;
    while (!this.#closed) {
      let frames: Uint8Array[];
      try {
        frames = await router.receive();
      } catch (e) {
        if ((e as { code?: string }).code !== "EAGAIN") return; // closed
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      const [id, , start] = frames;
      if (frames.length !== 3 || start!.length !== 8) continue; // not a replay request
      const from = new DataView(start!.buffer, start!.byteOffset, 8).getBigInt64(0, false);
      try {
        for (const b of this.#buffer) {
          if (b.seq >= from) {
            await router.send([id!, new Uint8Array(0), seqFrame(b.seq), b.payload]);
          }
        }
        await router.send([id!, new Uint8Array(0), END, new Uint8Array(0)]);
      } catch {
        // the requester went away
      }
    }
  }

  /** Send what is queued, then close both sockets. */
  async close(): Promise<void> {
    this.#flush();
    this.#closed = true;
    await this.#sending;
    this.#pub.close();
    this.#replay?.close();
  }
}

async function bindTo(socket: zmq.Socket, endpoint: string, flag: string): Promise<void> {
  try {
    await (socket as zmq.Publisher).bind(endpoint);
  } catch (e) {
    throw EngineError.invalidArgument(
      `${flag} ${endpoint}: cannot bind (${(e as Error).message})`,
      e,
    );
  }
}
