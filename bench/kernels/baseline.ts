/**
 * Kernels Kiln replaced, read from the commits where they were the live kernels (`git show
 * <tag>:<path>`) rather than kept as copies, so that a benchmark can time the old and the new
 * side by side in one run on one adapter: `matmul` (the 16×16 tiled prefill product before
 * `gemm.wgsl`), `matvec` (the float matrix-vector product before float weights became formats of
 * the product kernels), `attention` (per-query-head attention before the GQA kernel and
 * `rope_kv`) and `sampling` (top-k/top-p thresholds by 32-step bisection before the radix
 * select). Each tag is a lightweight tag on the commit named beside it; a clone without it
 * (shallow, or tags not fetched) gets an error naming the tag and how to make it.
 */
import { UNIFORM, uploadBuffer } from "../../src/gpu/buffers.ts";
import type { Dispatch } from "../../src/gpu/dispatch.ts";

/** A replaced kernel: the tag (and the commit it marks) where `path` was the live kernel. */
export interface Baseline {
  tag: string;
  commit: string;
  path: string;
}

/** Where each replaced kernel is read from. */
export const BASELINES = {
  attention: {
    tag: "bench-baselines-v1",
    commit: "62c448085a5f6f7b7fa1d4ba6e27a93387c0b1f9",
    path: "shaders/attention.wgsl",
  },
  matmul: {
    tag: "bench-baselines-v1",
    commit: "62c448085a5f6f7b7fa1d4ba6e27a93387c0b1f9",
    path: "shaders/matmul.wgsl",
  },
  sampling: {
    tag: "bench-baselines-v1",
    commit: "62c448085a5f6f7b7fa1d4ba6e27a93387c0b1f9",
    path: "shaders/sampling.wgsl",
  },
  matvec: {
    tag: "bench-baselines-v2",
    commit: "297d54ecf1b06cb3b6c019a84762ecdf004bbd18",
    path: "shaders/matvec.wgsl",
  },
} as const satisfies Record<string, Baseline>;

export type BaselineKernel = keyof typeof BASELINES;

const ROOT = new URL("../../", import.meta.url).pathname;

/**
 * `b.path` at `rev` (default: `b.tag`), by `git show` in this repository. Throws an Error naming
 * the revision, and for the tag the command that creates it, when git cannot show it.
 */
export async function readBaseline(b: Baseline, rev: string = b.tag): Promise<string> {
  const out = await new Deno.Command("git", {
    args: ["show", `${rev}:${b.path}`],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const why = new TextDecoder().decode(out.stderr).trim().replace(/\.$/, "");
    const make = rev === b.tag
      ? ` Create the tag with \`git tag ${b.tag} ${b.commit}\` (a shallow clone lacks the ` +
        `commit: \`git fetch --unshallow\` first), or fetch it with \`git fetch --tags\`.`
      : "";
    throw new Error(
      `a replaced kernel is read from git (${rev}:${b.path}) and git could not show it: ` +
        `${why}.${make}`,
    );
  }
  return new TextDecoder().decode(out.stdout);
}

/** The WGSL of a replaced kernel, from its tag. */
export function baselineSource(kernel: BaselineKernel): Promise<string> {
  return readBaseline(BASELINES[kernel]);
}

const modules = new Map<string, GPUShaderModule>();

/** A dispatch of `entry` in the replaced kernel `file` over `buffers` (binding → buffer). */
export async function baselineDispatch(
  device: GPUDevice,
  file: "matmul" | "attention" | "matvec",
  entry: string,
  spec: {
    constants?: Record<string, number>;
    uniform: ArrayBuffer;
    buffers: Record<number, GPUBuffer>;
    workgroups: Dispatch["workgroups"];
  },
): Promise<Dispatch> {
  let module = modules.get(file);
  if (module === undefined) {
    const code = await baselineSource(file);
    modules.set(file, module = device.createShaderModule({ label: `baseline:${file}`, code }));
  }
  const label = `baseline:${file}:${entry}`;
  const pipeline = await device.createComputePipelineAsync({
    label,
    layout: "auto",
    compute: { module, entryPoint: entry, constants: spec.constants ?? {} },
  });
  const uniform = uploadBuffer(device, `${label}:params`, new Uint8Array(spec.uniform), UNIFORM);
  const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: uniform } }];
  for (const [i, buffer] of Object.entries(spec.buffers)) {
    entries.push({ binding: Number(i), resource: { buffer } });
  }
  const bindGroup = device.createBindGroup({
    label,
    layout: pipeline.getBindGroupLayout(0),
    entries,
  });
  return { label, pipeline, bindGroup, workgroups: spec.workgroups };
}
