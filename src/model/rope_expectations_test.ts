/**
 * Kiln's RoPE against independent expectations (`test/fixtures/rope/expectations.json`, written
 * by `scripts/rope_expectations.py`, a float64 port of transformers' `ROPE_INIT_FUNCTIONS` and
 * Gemma 3's local base): each case's HF config is read as Kiln reads any config (`parseConfig`),
 * and the inverse frequencies (`ropeInvFreq`, with LongRoPE's engine context) and attention
 * factor (`ropeAttentionFactor`) must equal the expected ones to 1e-12 relative. Planted errors
 * (a broken frequency function run through the same check) must be rejected.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { type ModelConfig, parseConfig } from "./config.ts";
import { ropeAttentionFactor, ropeInvFreq, type RopeScaling } from "./rope.ts";

interface Case {
  name: string;
  convention: string;
  config: Record<string, unknown>;
  layer: "global" | "local";
  /** The engine's context (LongRoPE), or null. */
  context: number | null;
  rotary_dim: number;
  inv_freq: number[];
  attention_factor: number;
}

const CASES: Case[] = JSON.parse(
  await Deno.readTextFile(new URL("../../test/fixtures/rope/expectations.json", import.meta.url)),
).cases;

/** The frequencies of one layer kind of a parsed config at an engine context. */
type InvFreq = (c: ModelConfig, layer: Case["layer"], context?: number) => Float64Array;

const kiln: InvFreq = (c, layer, context) =>
  layer === "local"
    ? ropeInvFreq(c.headDim, c.ropeLocalTheta!, { type: "default" })
    : ropeInvFreq(c.rotaryDim ?? c.headDim, c.ropeTheta, c.ropeScaling, context);

const TOLERANCE = 1e-12;

/** The names of the cases `invFreq` gets wrong (beyond `TOLERANCE` relative, or wrong length). */
function failures(invFreq: InvFreq): string[] {
  const bad: string[] = [];
  for (const k of CASES) {
    const c = parseConfig(k.config);
    const got = invFreq(c, k.layer, k.context ?? undefined);
    const factor = k.layer === "local" ? 1 : ropeAttentionFactor(c.ropeScaling);
    const worst = got.length !== k.inv_freq.length ? Infinity : Math.max(
      Math.abs(factor - k.attention_factor) / k.attention_factor,
      ...k.inv_freq.map((want, i) => Math.abs(got[i]! - want) / want),
    );
    if (!(worst <= TOLERANCE)) bad.push(`${k.name} (${worst.toExponential(1)})`);
  }
  return bad;
}

Deno.test("RoPE: every scaling type matches transformers' (or the stated convention)", () => {
  const types = new Set(CASES.map((k) => parseConfig(k.config).ropeScaling.type));
  for (const t of ["default", "linear", "dynamic", "yarn", "llama3", "longrope"]) {
    ok(types.has(t as RopeScaling["type"]), `no ${t} case`);
  }
  equal(CASES.filter((k) => k.layer === "local").length, 2);
  for (const k of CASES) equal(k.inv_freq.length, k.rotary_dim / 2, k.name);
  const bad = failures(kiln);
  ok(bad.length === 0, bad.join("; "));
});

/** A frequency function with `change` applied to the config's scaling first. */
function withScaling(change: (s: RopeScaling) => RopeScaling): InvFreq {
  return (c, layer, context) => kiln({ ...c, ropeScaling: change(c.ropeScaling) }, layer, context);
}

/** Each mutant, and the prefixes of the only cases it may fail (those of its scaling). */
const MUTANTS: Record<string, { invFreq: InvFreq; hits: string[] }> = {
  "LongRoPE factors reversed": {
    invFreq: withScaling((s) =>
      s.type === "longrope"
        ? {
          ...s,
          shortFactor: [...s.shortFactor].reverse(),
          longFactor: [...s.longFactor].reverse(),
        }
        : s
    ),
    hits: ["longrope"],
  },
  "LongRoPE factors chosen by the model's context, not the engine's": {
    invFreq: (c, layer) => kiln(c, layer),
    hits: ["longrope short"],
  },
  "linear scaling inverted (inv_freq * factor)": {
    invFreq: (c, layer, context) => {
      const s = c.ropeScaling;
      if (s.type !== "linear" || layer === "local") return kiln(c, layer, context);
      return ropeInvFreq(c.rotaryDim ?? c.headDim, c.ropeTheta).map((f) => f * s.factor);
    },
    hits: ["linear", "gemma3 global"],
  },
  "llama3 low/high frequency factors swapped": {
    invFreq: withScaling((s) =>
      s.type === "llama3"
        ? { ...s, lowFreqFactor: s.highFreqFactor, highFreqFactor: s.lowFreqFactor }
        : s
    ),
    hits: ["llama3"],
  },
  "YaRN beta_fast/beta_slow swapped": {
    invFreq: withScaling((s) =>
      s.type === "yarn" ? { ...s, betaFast: s.betaSlow, betaSlow: s.betaFast } : s
    ),
    hits: ["yarn"],
  },
  "Gemma 3 local layers scaled like global ones": {
    invFreq: (c, layer, context) =>
      layer === "local"
        ? ropeInvFreq(c.headDim, c.ropeLocalTheta!, c.ropeScaling)
        : kiln(c, layer, context),
    hits: ["gemma3 local"],
  },
};

for (const [name, m] of Object.entries(MUTANTS)) {
  Deno.test(`RoPE expectations reject a planted error: ${name}`, () => {
    const bad = failures(m.invFreq);
    console.log(`  rejected ${bad.length} cases, e.g. ${bad[0]}`);
    ok(bad.length > 0, `${name} passed every case`);
    ok(
      bad.every((b) => m.hits.some((h) => b.startsWith(h))),
      `unexpected failures: ${bad.join("; ")}`,
    );
  });
}
