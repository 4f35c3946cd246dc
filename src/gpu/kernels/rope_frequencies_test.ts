import { strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { encodeRopeFrequencies } from "./rope_frequencies.ts";

/** The fraction of a turn that words [high, low] encode, in float64. */
const turnsOf = (w: Uint32Array, i: number) => (w[2 * i]! + w[2 * i + 1]! / 2 ** 32) / 2 ** 32;

Deno.test("RoPE frequencies: turns per position as a 64-bit fraction, whole turns dropped", () => {
  const inv = [1, 0.1, 1e-4, 0, 2 * Math.PI + 0.5, 0.75 * 2 * Math.PI];
  const w = encodeRopeFrequencies(inv);
  equal(w.length, 2 * inv.length);
  inv.forEach((f, i) => {
    const want = f / (2 * Math.PI) % 1;
    // Float64 carries 53 bits of the fraction: the words hold them, to 2^-53 of a turn.
    const err = Math.abs(turnsOf(w, i) - want);
    equal(err <= 2 ** -53, true, `frequency ${f}: ${turnsOf(w, i)} against ${want}`);
  });
  // Three quarters of a turn: the high word alone, exactly.
  equal(w[10], 0xc0000000);
  equal(w[11], 0);
  // Position 123457 at 1 rad per position, reduced by the shader's integer product: the
  // top 32 bits of the fraction 123457 * f equal those of the float64 angle's.
  const pos = 123457n;
  const word = (BigInt(w[0]!) << 32n) | BigInt(w[1]!);
  const frac = Number(((pos * word) & ((1n << 64n) - 1n)) >> 32n) / 2 ** 32;
  const angle = 123457 / (2 * Math.PI) % 1;
  equal(Math.abs(frac - angle) < 1e-9, true, `${frac} against ${angle}`);
});

Deno.test("RoPE frequencies: a negative or non-finite frequency is an InvalidArgument", () => {
  for (const bad of [-1, NaN, Infinity]) {
    throws(
      () => encodeRopeFrequencies([1, bad]),
      (e: unknown) => e instanceof EngineError && e.type === "InvalidArgument",
    );
  }
});
