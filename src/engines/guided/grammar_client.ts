/**
 * The engine's thread's side of the grammar worker: starts it on first use, sends it one request
 * at a time (matchers' requests before new compiles), times each call, and starts over after a
 * fault. A call that fails inside XGrammar (`fault`: the instance of its lane was dropped) makes
 * a new generation of that lane; one that runs past its budget (`timeout`: the worker is
 * terminated, the only way to stop a WASM call) of both. Every grammar and matcher number of an
 * old generation is void: compiled grammars are compiled again when next wanted, and each live
 * matcher of the lane rebuilds itself in the main lane's instance (see `RemoteMatcher`). Where
 * no worker can be started the host runs on this thread: the same handling, except that a call
 * cannot be stopped (no time budget).
 */
import { GrammarHost } from "./grammar_host.ts";
import type { GrammarReply, GrammarRequest, Lane, VocabInit } from "./grammar_protocol.ts";
import type { GuideSpec } from "./options.ts";

/** Why a grammar call failed. */
export type FailureKind =
  /** The call failed inside XGrammar (`reason`: the library's own account, if it gave one). */
  | "fault"
  /** The call ran past its time budget. */
  | "timeout"
  /** The grammar compiled but accepts no finite string. */
  | "infinite"
  /** Kiln's compilers will not enforce the spec (the message says why). */
  | "refused"
  /** XGrammar could not be started, or the client is closed. */
  | "unavailable"
  /** A matcher could not be rebuilt after its instance was dropped. */
  | "lost";

/** A grammar call that failed, and why. */
export class GrammarFailure extends Error {
  override readonly name = "GrammarFailure";
  constructor(readonly kind: FailureKind, message: string, readonly reason?: string) {
    super(message);
  }
}

/** Thrown to a request whose numbers belong to an instance dropped since it was queued. */
export const STALE: unique symbol = Symbol("stale");

/** How the client runs. */
export interface GrammarClientOptions {
  /** A new grammar worker, or undefined to run XGrammar on this thread. */
  spawn: () => Worker | undefined;
  /** The host XGrammar runs in on this thread, where no worker is started (default: a new one). */
  threadHost?: () => GrammarHost;
  /** Milliseconds one call (a compile, a matcher, a mask) may run. */
  timeoutMs: number;
  /** Milliseconds an instance may take to start (the library and the vocabulary). */
  initTimeoutMs: number;
  /** Compiled grammars kept (the least recently used dropped past it). */
  capacity: number;
}

/** Counts of what went wrong, for tests and logs. */
export interface GrammarCounts {
  /** Calls that failed in XGrammar. */
  faults: number;
  /** Calls that ran past their budget. */
  timeouts: number;
  /** Lane instances dropped (a fault: one; a timeout: both). */
  restarts: number;
  /** Grammar workers started. */
  workers: number;
  /** Matchers rebuilt in a new instance. */
  rebuilds: number;
}

type Request = GrammarRequest extends infer R ? R extends unknown ? Omit<R, "id"> : never
  : never;

interface Task {
  request: Request;
  /** The generation of its lane its numbers belong to (none: it names none). */
  gen: number | undefined;
  resolve(r: { reply: GrammarReply; gen: number }): void;
  reject(e: unknown): void;
}

interface Port {
  send(request: GrammarRequest): void;
  close(): void;
  /** Whether a call can be stopped (a worker's can; this thread's cannot). */
  readonly preemptive: boolean;
  /** Whether it has the vocabulary. */
  vocab: boolean;
  /** Whether anything came back from it yet. */
  answered: boolean;
}

interface Pending {
  id: number;
  lane: Lane;
  resolve(reply: GrammarReply): void;
  reject(e: unknown): void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

interface Compiled {
  ready: Promise<{ gen: number; id: number }>;
  gen?: number;
  id?: number;
}

/** The engine's client of one grammar worker (or of XGrammar on this thread). */
export class GrammarClient {
  #port: Port | undefined;
  /** Each lane's generation, and the generation whose instance is started. */
  readonly #gen = [0, 0];
  readonly #ready = [-1, -1];
  #queues: [Task[], Task[]] = [[], []];
  #busy = false;
  #pending: Pending | undefined;
  #next = 1;
  #unavailable: string | undefined;
  /** Set once a grammar worker failed before its first answer: XGrammar runs on this thread. */
  #noWorker = false;
  readonly #grammars = new Map<string, Compiled>();
  readonly counts: GrammarCounts = { faults: 0, timeouts: 0, restarts: 0, workers: 0, rebuilds: 0 };
  /** The last `grammar` call: how long it took, and whether it came from the cache. */
  lastCompile: { ms: number; cached: boolean } | undefined;

  constructor(
    readonly vocab: () => Promise<VocabInit>,
    readonly options: GrammarClientOptions,
  ) {}

  /** The generation of `lane`'s current instance (bumped each time one is dropped). */
  generation(lane: Lane): number {
    return this.#gen[lane]!;
  }

  /**
   * Send `request` when its turn comes (`urgent`: before every non-urgent one); `gen`: the
   * generation of its lane its numbers belong to, rejected with {@linkcode STALE} if that is
   * gone by then.
   */
  call(
    request: Request,
    { urgent = false, gen }: { urgent?: boolean; gen?: number } = {},
  ): Promise<{ reply: GrammarReply; gen: number }> {
    return new Promise((resolve, reject) => {
      this.#queues[urgent ? 0 : 1].push({ request, gen, resolve, reject });
      void this.#pump();
    });
  }

  /** Whether `key` is compiled (or compiling) in `lane`'s current instance. */
  compiled(key: string, lane: Lane): boolean {
    const hit = this.#grammars.get(`${lane}:${key}`);
    return hit !== undefined && (hit.gen === undefined || hit.gen === this.#gen[lane]);
  }

  /**
   * `spec` (canonical text `key`) compiled in `lane`'s current instance, from the cache if
   * there.
   */
  grammar(
    key: string,
    spec: GuideSpec,
    lane: Lane,
    urgent = false,
  ): Promise<{ gen: number; id: number }> {
    const hit = this.#grammars.get(`${lane}:${key}`);
    if (hit !== undefined && (hit.gen === undefined || hit.gen === this.#gen[lane])) {
      this.#grammars.delete(`${lane}:${key}`); // most recently used last
      this.#grammars.set(`${lane}:${key}`, hit);
      this.lastCompile = { ms: 0, cached: true };
      return hit.ready;
    }
    key = `${lane}:${key}`;
    const t0 = performance.now();
    const entry: Compiled = {
      ready: this.call({ op: "compile", lane, spec }, { urgent }).then(({ reply, gen }) => {
        if ("infinite" in reply) throw new GrammarFailure("infinite", "accepts no finite string");
        if ("refused" in reply) throw new GrammarFailure("refused", reply.refused);
        if (!("grammar" in reply)) throw new Error(`unexpected reply ${Object.keys(reply)}`);
        entry.gen = gen;
        entry.id = reply.grammar;
        this.lastCompile = { ms: performance.now() - t0, cached: false };
        return { gen, id: reply.grammar };
      }),
    };
    entry.ready.catch(() => this.#grammars.get(key) === entry && this.#grammars.delete(key));
    this.#grammars.set(key, entry);
    while (this.#grammars.size > this.options.capacity) {
      const [oldest, old] = this.#grammars.entries().next().value!;
      this.#grammars.delete(oldest);
      // Matchers made from it keep it alive in XGrammar; only the cache's hold is released.
      const at = Number(oldest.slice(0, 1)) as Lane;
      void old.ready.then(({ gen, id }) => {
        if (gen !== this.#gen[at]) return;
        this.call({ op: "drop", lane: at, grammars: [id], matchers: [] }, { gen }).catch(() => {});
      }, () => {});
    }
    return entry.ready;
  }

  /** End the worker; what is queued or in flight fails. */
  close(): void {
    this.#unavailable = "guided decoding: the engine has shut down";
    this.#discard(undefined, true);
    const failure = new GrammarFailure("unavailable", this.#unavailable);
    for (const t of this.#queues.flat()) t.reject(failure);
    this.#queues = [[], []];
  }

  async #pump(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      for (let t; (t = this.#queues[0].shift() ?? this.#queues[1].shift()) !== undefined;) {
        try {
          t.resolve(await this.#dispatch(t));
        } catch (e) {
          t.reject(e);
        }
      }
    } finally {
      this.#busy = false;
    }
  }

  async #dispatch(t: Task): Promise<{ reply: GrammarReply; gen: number }> {
    const { lane } = t.request;
    if (t.gen !== undefined && t.gen !== this.#gen[lane]) throw STALE;
    await this.#init(lane);
    const reply = await this.#send(t.request, this.options.timeoutMs);
    return { reply, gen: this.#gen[lane]! };
  }

  /** Start `lane`'s current instance, if not yet started. */
  async #init(lane: Lane): Promise<void> {
    while (this.#ready[lane] !== this.#gen[lane]) {
      const port = this.#connect();
      try {
        const vocab = port.vocab ? undefined : await this.vocab();
        await this.#send(
          vocab ? { op: "init", lane, vocab } : { op: "init", lane },
          this.options.initTimeoutMs,
        );
        port.vocab = true;
        this.#ready[lane] = this.#gen[lane]!;
      } catch (e) {
        // A worker that did not start: XGrammar on this thread instead, at once.
        if (port.preemptive && this.#noWorker) continue;
        // On this thread, a library that cannot be renewed cannot start again after a fault.
        if (!port.preemptive && port !== this.#port) {
          this.#unavailable = "guided decoding is off here: XGrammar failed earlier and cannot " +
            "start again on this thread (until the host restarts)";
          throw new GrammarFailure("unavailable", this.#unavailable);
        }
        const why = e instanceof GrammarFailure ? e.reason ?? e.message : String(e);
        throw new GrammarFailure("unavailable", `guided decoding: XGrammar did not start: ${why}`);
      }
    }
  }

  #connect(): Port {
    if (this.#unavailable !== undefined) {
      throw new GrammarFailure("unavailable", this.#unavailable);
    }
    if (this.#port !== undefined) return this.#port;
    const worker = this.#noWorker ? undefined : this.#spawn();
    const port: Port = worker === undefined
      ? threadPort(
        (this.options.threadHost ?? (() => new GrammarHost()))(),
        (r) => this.#port === port && this.#onReply(r),
      )
      : workerPort(
        worker,
        (r) => this.#port === port && this.#onReply(r),
        (why) => this.#port === port && this.#onError(why),
      );
    if (worker !== undefined) this.counts.workers++;
    return this.#port = port;
  }

  #send(request: Request, budgetMs: number): Promise<GrammarReply> {
    const port = this.#connect();
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      const timer = port.preemptive
        ? setTimeout(() => this.#timedOut(budgetMs), budgetMs)
        : undefined;
      this.#pending = { id, lane: request.lane, resolve, reject, timer };
      port.send({ ...request, id } as GrammarRequest);
    });
  }

  #settle(): Pending | undefined {
    const p = this.#pending;
    this.#pending = undefined;
    if (p?.timer !== undefined) clearTimeout(p.timer);
    return p;
  }

  /** A new grammar worker; undefined where none can be started. */
  #spawn(): Worker | undefined {
    try {
      return this.options.spawn();
    } catch {
      this.#noWorker = true; // a realm that refuses workers (a policy, an origin)
      return undefined;
    }
  }

  #onReply(reply: GrammarReply): void {
    if (this.#port !== undefined) this.#port.answered = true;
    if (this.#pending?.id !== reply.id) return;
    const p = this.#settle()!;
    if (!("fault" in reply)) return p.resolve(reply);
    this.counts.faults++;
    this.#discard(reply.fault.renewable ? p.lane : undefined, !reply.fault.renewable);
    const { reason } = reply.fault;
    p.reject(new GrammarFailure("fault", reason ?? "the grammar library failed", reason));
  }

  #timedOut(budgetMs: number): void {
    const p = this.#settle();
    this.counts.timeouts++;
    this.#discard(undefined, true);
    p?.reject(new GrammarFailure("timeout", `ran past ${budgetMs} ms`));
  }

  #onError(why: string): void {
    // A worker that never answered did not start (its file not found, say): do without one.
    if (this.#port?.answered === false) this.#noWorker = true;
    const p = this.#settle();
    this.counts.faults++;
    this.#discard(undefined, true);
    p?.reject(new GrammarFailure("fault", `the grammar worker failed: ${why}`));
  }

  /**
   * Drop `lane`'s current instance (undefined: both lanes'); `end`: and the worker. A new
   * generation of the lane begins.
   */
  #discard(lane: Lane | undefined, end: boolean): void {
    for (const l of lane === undefined ? [0, 1] : [lane]) {
      this.#gen[l]!++;
      this.counts.restarts++;
    }
    if (end) {
      this.#port?.close();
      this.#port = undefined;
    }
    this.#settle()?.reject(new GrammarFailure("unavailable", "the grammar worker was ended"));
  }
}

function workerPort(
  worker: Worker,
  onReply: (r: GrammarReply) => void,
  onError: (why: string) => void,
): Port {
  worker.onmessage = (e: MessageEvent<GrammarReply>) => onReply(e.data);
  worker.onerror = (e: ErrorEvent) => {
    e.preventDefault(); // handled here: not the engine thread's uncaught error
    onError(e.message);
  };
  worker.onmessageerror = () => onError("a reply could not be read");
  return {
    preemptive: true,
    vocab: false,
    answered: false,
    send: (request) => worker.postMessage(request),
    close: () => worker.terminate(),
  };
}

function threadPort(first: GrammarHost, onReply: (r: GrammarReply) => void): Port {
  let host: GrammarHost | undefined = first;
  return {
    preemptive: false,
    vocab: false,
    answered: false,
    send: (request) => {
      const h = host;
      if (h === undefined) return;
      void h.handle(request).then(({ reply }) => host === h && onReply(reply));
    },
    close: () => void (host = undefined),
  };
}
