/**
 * Small deliberately wrong ONNX graphs for the OrtEngine's bad-input tests (built with the
 * bench peers' `GraphBuilder`): the transformers.js layout with an input left out, or a node
 * whose op onnxruntime-web has no kernel for.
 */
import { Elem, GraphBuilder } from "../../tools/peers/onnx_graph.ts";

export interface BadGraphOptions {
  /** Inputs to leave out (e.g. `position_ids`, `past_key_values.1.value`). */
  skip?: readonly string[];
  /** An extra node of this op over an f16 value feeding `logits` (e.g. an op with no kernel). */
  op?: string;
  layers?: number;
}

/** A decoder-shaped graph: `logits` from the ids, each `present.*` the matching past. */
export function badGraph(o: BadGraphOptions = {}): Uint8Array {
  const g = new GraphBuilder();
  const skip = new Set(o.skip ?? []);
  const layers = o.layers ?? 2;
  const kv = ["batch", 4, "past", 32];
  for (const name of ["input_ids", "attention_mask", "position_ids"]) {
    if (!skip.has(name)) g.input(name, Elem.I64, ["batch", "seq"]);
  }
  let logits = g.op1("Cast", ["input_ids"], { to: Elem.F32 });
  if (o.op !== undefined) {
    const half = g.op1("Cast", [logits], { to: Elem.F16 });
    logits = g.op1("Cast", [g.op1(o.op, [half])], { to: Elem.F32 });
  }
  g.output(g.op1("Unsqueeze", [logits, g.ints([2])]), "logits", Elem.F32, ["batch", "seq", 1]);
  for (let i = 0; i < layers; i++) {
    for (const kind of ["key", "value"]) {
      const name = `past_key_values.${i}.${kind}`;
      if (skip.has(name)) continue;
      g.input(name, Elem.F32, kv);
      g.output(g.op1("Identity", [name]), `present.${i}.${kind}`, Elem.F32, kv);
    }
  }
  return g.encode("bad");
}
