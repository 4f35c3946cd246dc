/**
 * XGrammar's side of guided decoding: compiles grammars and runs matchers for the engine's
 * thread, one request at a time (see `grammar_protocol.ts`). It runs in the grammar worker
 * (`grammar_worker.ts`), or on the engine's own thread where no worker can be started.
 *
 * Any call into the library that throws (a refusal, which XGrammar makes by throwing out of the
 * WASM; a trap; an abort) leaves its instance in an unknown state: the stack and heap of the
 * failed call are never unwound, so after a few dozen the memory is corrupt. So the instance is
 * dropped at once, with every grammar and matcher in it, and the reply says so (`fault`); the
 * lane's next `init` starts a fresh one (see `xgrammarMaker`). The other lane is untouched.
 */
import type { FaultReport, GrammarReply, GrammarRequest, VocabInit } from "./grammar_protocol.ts";
import { onlyAllowed } from "../token_mask.ts";
import { ConstraintRefusal, specGrammar } from "./options.ts";
import { derivesFiniteString } from "./productive.ts";
import {
  LibraryError,
  withLibraryErrors,
  type XCompiledGrammar,
  type XCompiler,
  type XGrammar,
  type XGrammarMaker,
  xgrammarMaker,
  type XMatcher,
} from "./xgrammar.ts";

/** One XGrammar instance and what lives in it. */
interface Instance {
  xg: XGrammar;
  compiler: XCompiler;
  grammars: Map<number, XCompiledGrammar>;
  matchers: Map<number, XMatcher>;
}

/** A reply and the buffers it transfers. */
export interface Answer {
  reply: GrammarReply;
  transfer: ArrayBuffer[];
}

/** XGrammar for one engine: its vocabulary, its lanes' instances, grammars and matchers. */
export class GrammarHost {
  #vocab: VocabInit | undefined;
  #maker: XGrammarMaker | undefined;
  /** The current instance of each lane. */
  readonly #lanes: (Instance | undefined)[] = [undefined, undefined];
  #next = 1;
  #chain: Promise<unknown> = Promise.resolve();

  /** `maker`: where libraries come from (default: this realm's, see `xgrammarMaker`). */
  constructor(readonly maker: () => Promise<XGrammarMaker> = xgrammarMaker) {}

  /** Answer `request` (requests are answered one after another). */
  handle(request: GrammarRequest): Promise<Answer> {
    const run = this.#chain.then(() => this.#handle(request));
    this.#chain = run.catch(() => {});
    return run;
  }

  async #handle(request: GrammarRequest): Promise<Answer> {
    const { id } = request;
    try {
      this.#maker ??= await this.maker();
      const reply = await withLibraryErrors(() => this.#run(request));
      const transfer = "mask" in reply ? [reply.mask.buffer as ArrayBuffer] : [];
      return { reply, transfer };
    } catch (e) {
      // Drop the lane's instance: never called into again (its memory goes with it). One that
      // cannot be renewed serves both lanes (see `init`): both are gone.
      this.#lanes[request.lane] = undefined;
      if (this.#maker?.renewable !== true) this.#lanes.fill(undefined);
      const fault: FaultReport = {
        raw: String(e),
        renewable: this.#maker?.renewable ?? false,
      };
      if (e instanceof LibraryError && e.reason !== undefined) fault.reason = e.reason;
      return { reply: { id, fault }, transfer: [] };
    }
  }

  async #run(request: GrammarRequest): Promise<GrammarReply> {
    const { id } = request;
    if (request.op === "init") {
      if (request.vocab !== undefined) this.#vocab = request.vocab;
      const other = this.#lanes[1 - request.lane];
      this.#lanes[request.lane] = undefined;
      // Where the realm makes one library only, both lanes share it.
      this.#lanes[request.lane] = this.#maker!.renewable || other === undefined
        ? await this.#start()
        : other;
      return { id, ok: true };
    }
    const live = this.#lanes[request.lane];
    if (live === undefined) throw new Error(`no XGrammar instance in lane ${request.lane}`);
    switch (request.op) {
      case "compile": {
        let ebnf: string;
        try {
          ebnf = specGrammar(request.spec);
        } catch (e) {
          if (e instanceof ConstraintRefusal) return { id, refused: e.message };
          throw e;
        }
        // Kiln's refusals above are its own; a throw from here on is the library's fault.
        const compiled = await live.compiler.compileGrammar(ebnf, "root");
        const grammar = compiled.grammar();
        const finite = derivesFiniteString(grammar.toString());
        grammar.dispose();
        if (finite === false) {
          compiled.dispose();
          return { id, infinite: true };
        }
        const n = this.#next++;
        live.grammars.set(n, compiled);
        return { id, grammar: n };
      }
      case "matcher": {
        const compiled = live.grammars.get(request.grammar);
        if (compiled === undefined) throw new Error(`no grammar ${request.grammar}`);
        const m = await live.xg.GrammarMatcher.createGrammarMatcher(
          compiled,
          request.stops.length > 0 ? request.stops : undefined,
          request.terminate,
          -1,
        );
        const rejected = request.accept.findIndex((t) => !m.acceptToken(t));
        if (rejected >= 0) {
          m.dispose();
          return { id, rejected };
        }
        const n = this.#next++;
        live.matchers.set(n, m);
        return { id, matcher: n };
      }
      case "step":
        return await step(live, request);
      case "drop":
        for (const n of request.grammars) {
          live.grammars.get(n)?.dispose();
          live.grammars.delete(n);
        }
        for (const n of request.matchers) {
          live.matchers.get(n)?.dispose();
          live.matchers.delete(n);
        }
        return { id, ok: true };
    }
  }

  /** A fresh instance over the vocabulary. */
  async #start(): Promise<Instance> {
    const vocab = this.#vocab;
    if (vocab === undefined) throw new Error("init without a vocabulary");
    const xg = await this.#maker!.make();
    const info = await xg.TokenizerInfo.createTokenizerInfo(
      vocab.encoded,
      "byte_level",
      false,
      vocab.size,
      vocab.eos,
    );
    // Kiln caches compiled grammars itself; XGrammar's own cache would keep a failed compile.
    const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
    return { xg, compiler, grammars: new Map(), matchers: new Map() };
  }
}

async function step(
  live: Instance,
  request: Extract<GrammarRequest, { op: "step" }>,
): Promise<GrammarReply> {
  const { id } = request;
  const m = live.matchers.get(request.matcher);
  if (m === undefined) throw new Error(`no matcher ${request.matcher}`);
  if (request.rollback > 0) m.rollBack(request.rollback);
  const rejected = request.accept.findIndex((t) => !m.acceptToken(t));
  if (rejected >= 0) return { id, rejected };
  // A mask that allows one token only (a forced token, which the engine takes without a step)
  // is followed at once: the masks after it come back together, one reply for a run.
  const forced: number[] = [];
  for (;;) {
    // After a stop token the grammar is over: nothing may follow (a dead end).
    if (m.isTerminated()) return { id, terminated: true, forced };
    const mask = await m.getNextTokenBitmask();
    const only = forced.length < request.ahead
      ? onlyAllowed(new Uint32Array(mask.buffer, mask.byteOffset, mask.length), Infinity)
      : undefined;
    if (only === undefined || !m.acceptToken(only)) return { id, mask, forced };
    forced.push(only);
  }
}
