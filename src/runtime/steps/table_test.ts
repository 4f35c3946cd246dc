/**
 * The step compiler table covers every recipe op: every step of every registered family's layer
 * recipe has a compiler. Planted: a table without an op's compiler is a type error (the
 * `@ts-expect-error` below fails the type check, and so this test, if it ever type-checks).
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { ARCHS, type LayerStep } from "../../model/arch/mod.ts";
import { STEP_COMPILERS } from "./table.ts";

Deno.test("STEP_COMPILERS: a compiler for every op of every family's recipe; planted: a table without moe_mlp does not type-check", () => {
  const ops = new Set<LayerStep["op"]>();
  for (const arch of ARCHS.values()) for (const step of arch.layer) ops.add(step.op);
  ok(ops.has("attention") && ops.has("moe_mlp"), `the families' ops: ${[...ops]}`);
  for (const op of ops) equal(typeof STEP_COMPILERS[op], "function", op);
  const { moe_mlp: _, ...partial } = STEP_COMPILERS;
  // @ts-expect-error: the table's type lists every op, so one without moe_mlp is refused.
  const table: typeof STEP_COMPILERS = partial;
  equal(Object.keys(table).length, Object.keys(STEP_COMPILERS).length - 1);
});
