/**
 * The guided part of `deno task bench`, for a model with a tokenizer (`--model DIR`; the
 * random-weight shapes have none): what XGrammar takes to compile a 50-property JSON Schema
 * (the first compile in the process, which loads XGrammar's WASM and builds the vocabulary's
 * `TokenizerInfo`; a second schema; the cache), and decode tokens/s of greedy streams
 * constrained by a JSON Schema against the same streams free, at batch 1 and 8, taking turns
 * round by round. The constrained streams are JSON arrays of small records (`minItems` as many
 * as the tokens asked for, so the grammar never ends first): every token goes through
 * XGrammar's matcher and the GPU's mask. The guided streams run twice: with forced stretches (the
 * engine's default: runs of tokens the grammar allows alone computed in one step) and without.
 *
 * @module
 */
import { Guides } from "../../src/engines/guided/guides.ts";
import { parseGuided } from "../../src/engines/guided/options.ts";
import { readText } from "../../src/formats/source.ts";
import type { ModelFiles } from "../../src/formats/source.ts";
import { loadText } from "../../src/text/load.ts";
import { KilnRunner } from "./kiln_runner.ts";
import { median } from "./compare.ts";

export interface GuidedDecode {
  batch: number;
  tokens_per_stream: number;
  free_tps: number;
  guided_tps: number;
  /** guided_tps / free_tps (medians over the rounds). */
  ratio: number;
  /**
   * The free streams on an engine that reads every step's tokens back before the next
   * (`pipelineDepth: 1`), as a guided sequence must (its next mask needs its last token): the
   * part of the cost that is lost pipelining rather than masks.
   */
  free_depth1_tps: number;
  /** guided_tps / free_depth1_tps. */
  ratio_to_depth1: number;
  /** The guided streams with forced stretches off (`guidedForcing: "off"`): every token sampled. */
  guided_unforced_tps: number;
  /** guided_unforced_tps / free_tps. */
  ratio_unforced: number;
  free_tps_all: number[];
  guided_tps_all: number[];
  /** Rounds where a guided stream ended before `tokens_per_stream` (a dead end): should be 0. */
  guided_short: number;
}

export interface GuidedResult {
  /** The streams' schema, as sent in `guided_decoding.json`. */
  decode_schema: object;
  compile: {
    properties: number;
    /** The first compile in this engine's `Guides` (XGrammar's WASM loaded by it if first). */
    first_ms: number;
    /** Whether XGrammar's WASM was already loaded in this process (an earlier shape). */
    xgrammar_loaded_before: boolean;
    /** Another 50-property schema, XGrammar and the vocabulary loaded. */
    second_ms: number;
    /** The first schema again (the cache). */
    cache_hit_ms: number;
    cache_hit: boolean;
  };
  decode: GuidedDecode[];
}

let xgrammarLoaded = false;

/** A closed 50-property schema (integer ranges, bounded strings and arrays, enums, objects). */
export function fiftyProperties(prefix: string): object {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < 50; i++) {
    properties[`${prefix}_${i}`] = [
      { type: "integer", minimum: 0, maximum: 1000 },
      { type: "string", maxLength: 32 },
      { type: "array", items: { type: "boolean" }, maxItems: 4 },
      { enum: ["a", "b", "c"] },
      {
        type: "object",
        properties: { x: { type: "integer" }, y: { type: "string" } },
        required: ["x"],
      },
    ][i % 5];
  }
  return {
    type: "object",
    properties,
    required: Object.keys(properties),
    additionalProperties: false,
  };
}

/** Records `{"name": ..., "n": ..., "ok": ...}`, at least `n` of them. */
export const recordsSchema = (n: number): object => ({
  type: "array",
  items: {
    type: "object",
    properties: {
      name: { type: "string", maxLength: 12 },
      n: { type: "integer", minimum: 0, maximum: 9999 },
      ok: { type: "boolean" },
    },
    required: ["name", "n", "ok"],
    additionalProperties: false,
  },
  minItems: n,
});

/** Whether `files` has what guided decoding needs (a tokenizer). */
export async function hasTokenizer(files: ModelFiles): Promise<boolean> {
  return files.gguf !== undefined || (await readText(files, "tokenizer.json")) !== undefined;
}

async function compileTimes(files: ModelFiles, vocab: number): Promise<GuidedResult["compile"]> {
  const guides = new Guides(async () => (await loadText(files)).tokenizer, vocab);
  const time = async (schema: object) => {
    const t0 = performance.now();
    await guides.compile(parseGuided({ json: schema }));
    return performance.now() - t0;
  };
  try {
    const loadedBefore = xgrammarLoaded;
    const first = await time(fiftyProperties("field"));
    xgrammarLoaded = true;
    const second = await time(fiftyProperties("other"));
    const again = await time(fiftyProperties("field"));
    return {
      properties: 50,
      first_ms: first,
      xgrammar_loaded_before: loadedBefore,
      second_ms: second,
      cache_hit_ms: again,
      cache_hit: guides.lastCompile?.cached === true,
    };
  } finally {
    // Its grammar worker would keep the process alive.
    guides.close();
  }
}

/**
 * Compile times, then for each of `batches`: `rounds` turns of free and guided greedy streams
 * of `tokens` tokens (`prompts(b)`: b fresh prompts) and free ones on a second engine at
 * pipeline depth 1 (loaded from `dir` on the same device), after short warm-up runs.
 */
export async function guidedBench(
  kiln: KilnRunner,
  dir: string,
  files: ModelFiles,
  vocab: number,
  o: {
    batches: number[];
    tokens: number;
    rounds: number;
    prompts: (b: number) => number[][];
    log: (l: string) => void;
  },
): Promise<GuidedResult> {
  o.log("guided: compile times");
  const compile = await compileTimes(files, vocab);
  const schema = recordsSchema(o.tokens);
  const guided = { json: schema };
  const decode: GuidedDecode[] = [];
  const depth1 = new KilnRunner({ ...kiln.options, pipelineDepth: 1 });
  const unforced = new KilnRunner({ ...kiln.options, guidedForcing: "off" });
  await depth1.setup(dir);
  await unforced.setup(dir);
  try {
    for (const b of o.batches) decode.push(await atBatch(b));
  } finally {
    await depth1.close();
    await unforced.close();
  }
  return { decode_schema: schema, compile, decode };

  async function atBatch(b: number): Promise<GuidedDecode> {
    o.log(`guided: decode, batch ${b}`);
    await kiln.run(o.prompts(b), Math.min(3, o.tokens), guided); // compiles, warms
    await depth1.run(o.prompts(b), Math.min(3, o.tokens));
    await unforced.run(o.prompts(b), Math.min(3, o.tokens), guided);
    const free: number[] = [], constrained: number[] = [], unpiped: number[] = [];
    const sampled: number[] = [];
    let short = 0;
    for (let r = 0; r < o.rounds; r++) {
      const f = await kiln.run(o.prompts(b), o.tokens);
      free.push(f.timed / f.seconds);
      const g = await kiln.run(o.prompts(b), o.tokens, guided);
      constrained.push(g.timed / g.seconds);
      if (g.tokens < b * o.tokens) short++;
      const d = await depth1.run(o.prompts(b), o.tokens);
      unpiped.push(d.timed / d.seconds);
      const u = await unforced.run(o.prompts(b), o.tokens, guided);
      sampled.push(u.timed / u.seconds);
    }
    const ft = median(free), gt = median(constrained), dt = median(unpiped);
    const ut = median(sampled);
    return {
      batch: b,
      tokens_per_stream: o.tokens,
      free_tps: ft,
      guided_tps: gt,
      ratio: gt / ft,
      free_depth1_tps: dt,
      ratio_to_depth1: gt / dt,
      guided_unforced_tps: ut,
      ratio_unforced: ut / ft,
      free_tps_all: free,
      guided_tps_all: constrained,
      guided_short: short,
    };
  }
}
