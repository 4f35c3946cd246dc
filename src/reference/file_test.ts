import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { MODELS } from "../../test/support/models.ts";
import { parseConfig } from "../model/config.ts";
import {
  buildReference,
  COMPUTED_IN,
  isLogitsManifest,
  logitsManifestReference,
  seededPrompts,
  weightsDtype,
} from "./file.ts";
import { EngineError } from "../contract/errors.ts";
import { ReferenceModel } from "./model.ts";
import { readCheckpoint } from "../formats/safetensors.ts";
import { parseReference } from "./verify.ts";
import { mapWeights } from "../model/weights.ts";

async function load(dir: string) {
  const files = dirFiles(dir);
  const config = parseConfig(await Deno.readTextFile(`${dir}config.json`));
  const weights = mapWeights(config, await readCheckpoint((n) => files.open(n)));
  return { config, weights };
}

Deno.test("seeded prompts: 5 to 9 tokens, BOS first, no EOS, the same every time", async () => {
  const { config } = await load(MODELS[0].dir.pathname);
  const prompts = seededPrompts(config);
  equal(prompts.length, 3);
  deepStrictEqual(seededPrompts(config), prompts);
  for (const p of prompts) {
    ok(p.length >= 5 && p.length <= 9, `${p.length}`);
    equal(p[0], config.bosTokenId);
    ok(p.slice(1).every((id) => id >= 0 && id < config.vocabSize && id !== config.bosTokenId));
    ok(p.every((id) => !config.eosTokenIds.includes(id)));
  }
  const { bosTokenId: _, ...noBos } = config;
  ok(seededPrompts(noBos, 2, 7).every((p) => p[0] !== config.bosTokenId));
});

Deno.test("a reference file in the fixtures' format: dtype names, fields, step 0 = the last prompt position", async () => {
  const dtypes = ["float32", "float16", "bfloat16"];
  for (const [i, { name, dir }] of MODELS.slice(0, 3).entries()) {
    const { config, weights } = await load(dir.pathname);
    equal(weightsDtype(weights), dtypes[i]);
    const model = await ReferenceModel.load(config, weights);
    const seen: number[] = [];
    const ref = buildReference(model, weights, name, [[1, 2, 3], [4]], 3, (j) => seen.push(j));
    deepStrictEqual(seen, [0, 1]);
    const back = parseReference(JSON.stringify(ref));
    deepStrictEqual(
      { ...back, prompts: [] },
      {
        name,
        arch: config.arch,
        dtype: dtypes[i],
        vocab_size: config.vocabSize,
        computed_in: COMPUTED_IN,
        prompts: [],
      },
    );
    for (const p of back.prompts) {
      equal(p.logits.length, p.input_ids.length);
      equal(p.greedy_tokens.length, 3);
      equal(p.greedy_margins.length, 3);
      deepStrictEqual(p.greedy_step_logits[0], p.logits.at(-1));
      p.greedy_step_logits.forEach((row, s) => {
        const sorted = [...row].sort((a, b) => b - a);
        equal(row.indexOf(sorted[0]!), p.greedy_tokens[s]);
        equal(p.greedy_margins[s], sorted[0]! - sorted[1]!);
      });
    }
  }
});

Deno.test("a logits manifest (family fixture) is a one-prompt reference; a short logits file is refused", async () => {
  const dir = new URL("../../test/fixtures/families/qwen3/", import.meta.url);
  const manifest = JSON.parse(await Deno.readTextFile(new URL("manifest.json", dir)));
  ok(isLogitsManifest(manifest));
  ok(!isLogitsManifest({ prompts: [] }));
  const bytes = await Deno.readFile(new URL(manifest.logits.file, dir));
  const ref = logitsManifestReference(manifest, bytes);
  const [rows, vocab] = manifest.logits.shape;
  equal(ref.vocab_size, vocab);
  equal(ref.prompts.length, 1);
  const p = ref.prompts[0]!;
  deepStrictEqual(p.input_ids, manifest.tokens);
  equal(p.logits.length, rows);
  equal(p.logits[1]![7], new DataView(bytes.buffer).getFloat32((vocab + 7) * 4, true));
  equal(ref.reference_error, manifest.float64_reference.max_abs_error);
  try {
    logitsManifestReference(manifest, bytes.subarray(4));
    throw new Error("accepted a short file");
  } catch (e) {
    ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
  }
});
