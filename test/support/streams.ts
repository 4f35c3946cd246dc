/**
 * Event-driven helpers for tests that act in the middle of a stream: instead of sleeping and
 * hoping the stream is still running, wait for its first chunk (it has started), then act while
 * the rest is still to come (ask for many more tokens than a run needs to reach the act).
 */
import type { GenerateContext, LLMEngine } from "../../src/contract/engine.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../../src/contract/types.ts";

/** A stream being consumed: `first` settles on its first item, `done` at its end. */
export interface Watched<T> {
  /** Resolves at the first item; rejects if the stream ends or fails before one. */
  first: Promise<void>;
  /** Every item, or the stream's error. */
  done: Promise<T[]>;
}

/** Consume `stream` now, telling when its first item arrives and when it ends. */
export function watch<T>(stream: AsyncIterable<T>): Watched<T> {
  let started!: () => void;
  let none!: (e: unknown) => void;
  const first = new Promise<void>((resolve, reject) => {
    started = resolve;
    none = reject;
  });
  first.catch(() => {}); // a test that waits only for `done` hears the error there
  const done = (async () => {
    const items: T[] = [];
    try {
      for await (const item of stream) {
        items.push(item);
        if (items.length === 1) started();
      }
    } catch (e) {
      none(e);
      throw e;
    }
    none(new Error("the stream ended before its first item"));
    return items;
  })();
  return { first, done };
}

type Generate = (request: PreprocessedRequest, ctx: GenerateContext) => AsyncIterable<
  LLMEngineOutput
>;

/**
 * Resolves once `n` streams of `engine` (started by whoever calls its `generate`: a server, a
 * supervisor) have each yielded a chunk; `engine.generate` is wrapped on this instance to tell.
 * The chunks pass through unchanged.
 */
export function firstChunks(engine: Pick<LLMEngine, "generate">, n: number): Promise<void> {
  const inner = engine.generate.bind(engine) as Generate;
  let seen = 0;
  let all!: () => void;
  const ready = new Promise<void>((resolve) => (all = resolve));
  (engine as { generate: Generate }).generate = (request, ctx) =>
    (async function* () {
      let counted = false;
      for await (const chunk of inner(request, ctx)) {
        if (!counted) {
          counted = true;
          if (++seen === n) all();
        }
        yield chunk;
      }
    })();
  return ready;
}
