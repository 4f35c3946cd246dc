/**
 * The messages between an engine's thread (`GrammarClient`) and the realm XGrammar runs in
 * (`GrammarHost`: the grammar worker, or the engine's own thread where no worker can be
 * started). One request is in flight at a time; each reply names its request's `id`. The host
 * keeps two XGrammar instances, its lanes: `PROBE` compiles constraints the first time (where
 * refusals happen) and holds the matchers made from them; `MAIN` only ever compiles grammars
 * that compiled before, and holds the matchers rebuilt there after the probe lane failed.
 * Compiled grammars and matchers are numbered by the host and live in one lane's current
 * instance only: after a fault in that lane they are gone.
 */
import type { GuideSpec } from "./options.ts";

/** The model's vocabulary as XGrammar's `TokenizerInfo` takes it (see `vocabulary`). */
export interface VocabInit {
  /** Each token's bytes in the byte-level alphabet; "" for special and padding ids. */
  encoded: string[];
  /** The model's vocabulary size (its logits' width). */
  size: number;
  /** The tokenizer's EOS ids (below `size`). */
  eos: number[];
}

/** A lane of the host: one XGrammar instance (see the module's doc). */
export type Lane = 0 | 1;
/** The lane of grammars that compiled before (and matchers rebuilt after a probe fault). */
export const MAIN: Lane = 0;
/** The lane of first compiles, and of the matchers made from them. */
export const PROBE: Lane = 1;

/** What the engine's thread asks. */
export type GrammarRequest =
  & { id: number; lane: Lane }
  & (
    /** Start the lane's XGrammar instance over the vocabulary (sent the first time only). */
    | { op: "init"; vocab?: VocabInit }
    | { op: "compile"; spec: GuideSpec }
    /** A matcher over grammar `grammar`, with `accept` accepted (a rebuild's replay). */
    | {
      op: "matcher";
      grammar: number;
      stops: number[];
      terminate: boolean;
      accept: number[];
    }
    /**
     * Roll matcher `matcher` back `rollback` tokens, accept `accept`, give the next mask; while
     * a mask allows exactly one token (forced), accept it too, up to `ahead` of them.
     */
    | { op: "step"; matcher: number; rollback: number; accept: number[]; ahead: number }
    | { op: "drop"; grammars: number[]; matchers: number[] }
  );

/** The library's account of a failed call (see `LibraryError`). */
export interface FaultReport {
  /** XGrammar's reason (its `[FATAL]` line), when it gave one; none: the call trapped. */
  reason?: string;
  /** The error as thrown (for logs only: never shown to a request). */
  raw: string;
  /** Whether the host can start a fresh XGrammar instance in its realm (else: end it). */
  renewable: boolean;
}

/** What the host answers. */
export type GrammarReply =
  & { id: number }
  & (
    | { ok: true }
    | { grammar: number }
    /** The grammar compiled but accepts no finite string. */
    | { infinite: true }
    /** Kiln's compilers will not enforce the spec (`ConstraintRefusal`): why, in their words. */
    | { refused: string }
    | { matcher: number }
    /**
     * `ceil(vocab / 32)` words, bit set: allowed. After a step, the mask that follows the output
     * and then `forced`, the tokens the masks before it allowed alone (accepted too).
     */
    | { mask: Int32Array; forced?: number[] }
    /** The matcher has ended (after a stop token, the last of `forced` if any). */
    | { terminated: true; forced?: number[] }
    /** `accept[index]` is outside the grammar (the tokens before it were accepted). */
    | { rejected: number }
    /** A call failed: the instance is discarded, every number it gave is void. */
    | { fault: FaultReport }
  );
