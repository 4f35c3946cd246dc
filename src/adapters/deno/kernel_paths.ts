/**
 * `KILN_KERNEL_PATHS=cpu|gpu`: the kernel paths (see `gpu/paths.ts`) of the device a Deno tool
 * acquires; unset, the adapter's default (`cpu` on a fallback adapter such as lavapipe, else
 * `gpu`). `gpu` on a CPU adapter runs every kernel a GPU runs. Only the Deno tools read the
 * variable; the core takes the choice as an option (`acquireGpu({ paths })`,
 * `WebGpuEngineOptions.kernelPaths`, `HostOptions.kernelPaths`).
 */
import { PATH_KINDS, type PathKind } from "../../gpu/paths.ts";
import type { FlagTable } from "./flags.ts";

/** The variable, declared for a tool's `env` table (checked like a flag). */
export const KERNEL_PATHS_ENV = {
  KILN_KERNEL_PATHS: {
    type: "enum",
    choices: PATH_KINDS,
    help: "the kernel paths: gpu runs a GPU's kernels on a CPU adapter (default: the adapter's)",
  },
} as const satisfies FlagTable;

/** `{ kernelPaths }` when the variable was set, else nothing: to spread into engine options. */
export function kernelPathsOption(
  env: { KILN_KERNEL_PATHS: PathKind | undefined },
): { kernelPaths?: PathKind } {
  return env.KILN_KERNEL_PATHS === undefined ? {} : { kernelPaths: env.KILN_KERNEL_PATHS };
}
