/**
 * The pipelines a forward step dispatches, read from its plan (Deno tests and browser pages):
 * which kernels a device's kernel paths (`src/gpu/paths.ts`) really take.
 */
import type { Dispatch } from "../../src/gpu/dispatch.ts";
import { Forward } from "../../src/runtime/forward.ts";
import type { GpuModel } from "../../src/runtime/gpu_model.ts";

/** A dispatch's pipeline: its shader file and variant, entry point and override constants. */
export interface Pipeline {
  /** The shader file (`matvec_quant`). */
  shader: string;
  /** The composed variant (`matvec_quant:format=q8_0`; the file alone when it has none). */
  variant: string;
  entry: string;
  constants: Record<string, number>;
}

/**
 * The pipeline a dispatch runs, from its label (`kiln:<variant>:<entry>:<K=V,...>`, the variant
 * `<shader>` or `<shader>:<k=v,...>`).
 */
export function pipelineOf(d: Dispatch): Pipeline {
  const m = /^kiln:([^:]+(?::[^:]+=[^:]*)?):([^:=]+):(.*)$/.exec(d.pipeline.label);
  if (!m) throw new Error(`${d.label}: pipeline label ${JSON.stringify(d.pipeline.label)}`);
  const constants: Record<string, number> = {};
  for (const kv of m[3]!.split(",").filter((s) => s)) {
    const [k, v] = kv.split("=");
    constants[k!] = Number(v);
  }
  return { shader: m[1]!.split(":")[0]!, variant: m[1]!, entry: m[2]!, constants };
}

/** The dispatches of a step of `tokens` tokens and one logit row, by label, with their pipelines. */
export async function stepPipelines(
  model: GpuModel,
  tokens: number,
): Promise<Map<string, Pipeline>> {
  const fwd = new Forward(model);
  try {
    const dispatches = await fwd.warm([{ tokens, rows: 1 }]);
    return new Map(dispatches.map((d) => [d.label, pipelineOf(d)]));
  } finally {
    fwd.destroy();
  }
}

/** The labels of every layer's products: q/k/v, o, gate/up, down. */
export function productLabels(layers: number): string[] {
  const names = ["qkv", "o", "gate_up", "down"];
  return Array.from({ length: layers }, (_, l) => names.map((p) => `L${l}:${p}`)).flat();
}
