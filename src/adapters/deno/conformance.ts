/**
 * `deno task conformance --engine <name> [--model DIR] [--json]`: run the conformance kit and
 * print one line per check. Exit 0 when every check passes, 1 on a failure, 2 on bad usage.
 */
import { EngineError } from "../../contract/errors.ts";
import { engineFactory, engineNames } from "../../conformance/engines.ts";
import { formatReport, runConformanceReport } from "../../conformance/kit.ts";
import "./engines.ts";
import { runCli } from "./flags.ts";
import { KERNEL_PATHS_ENV } from "./kernel_paths.ts";
import { requireModelPath } from "./model_path.ts";

const { flags, env, fail } = runCli({
  name: "conformance",
  command: "deno task conformance",
  about: `Dynamo's backend conformance checks against an engine, one line per check. Engines: ${
    engineNames().join(", ")
  }.`,
  flags: {
    engine: { type: "string", arg: "NAME", required: true, help: "the engine to check" },
    model: {
      type: "string",
      arg: "DIR",
      help: "webgpu, worker: a checkpoint folder or GGUF file; ort, ort-worker: an ONNX export " +
        "folder (default: fortune's)",
    },
    "kv-blocks": {
      type: "integer",
      min: 1,
      help: "webgpu, worker: KV cache blocks (default: four contexts)",
    },
    variant: { type: "string", help: "ort, ort-worker: the graph in onnx/ (e.g. model_fp16)" },
    ep: { type: "enum", choices: ["webgpu", "wasm"], help: "ort, ort-worker: execution provider" },
    json: { type: "boolean", help: "print the report as one JSON object" },
  },
  env: KERNEL_PATHS_ENV,
});
if (flags.model !== undefined) requireModelPath("conformance", flags.model);
// The engine makers read their options as text, as the command line gave them.
const options: Record<string, string> = {};
for (const k of ["model", "kv-blocks", "variant", "ep"] as const) {
  if (flags[k] !== undefined) options[k] = String(flags[k]);
}
// webgpu, worker: the kernel paths of the engine's device.
if (env.KILN_KERNEL_PATHS !== undefined) options["kernel-paths"] = env.KILN_KERNEL_PATHS;
// An engine that cannot be made from these options (no ONNX export to default to) is bad usage.
const made = await engineFactory(flags.engine, options).catch((e: unknown) => {
  if (e instanceof EngineError && e.type === "InvalidArgument") fail(e.message);
  throw e;
});
const factory = made ?? fail(`unknown engine: ${flags.engine}`);
const report = await runConformanceReport(factory);
console.log(flags.json ? JSON.stringify(report) : formatReport(report));
Deno.exit(report.passed ? 0 : 1);
