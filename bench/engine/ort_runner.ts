/**
 * onnxruntime-web's engine (`OrtEngine`) timed exactly as Kiln's own: the same `EngineRunner`
 * calls over `LLMEngine`, on an ONNX export of the very weights Kiln runs (`deno task bench
 * --engine ort`). The export folder is `--onnx DIR`, or for the fortune model its export made
 * by the test fixture helper.
 */
import { OrtEngine } from "../../src/engines/ort/mod.ts";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { EngineRunner } from "./kiln_runner.ts";

export interface OrtRunnerOptions {
  /** The ONNX export folder (`config.json`, `onnx/<variant>.onnx`). */
  onnxDir: string;
  /** Default `model`: the f32 graph, whose arithmetic matches Kiln's f32 products. */
  variant?: string;
  executionProvider?: "webgpu" | "wasm";
  maxNumSeqs: number;
}

export class OrtRunner extends EngineRunner<OrtEngine> {
  readonly name: string;

  constructor(readonly options: OrtRunnerOptions) {
    super();
    const o = options;
    // Short: the chart labels bars with it. The wasm EP says so; WebGPU is the default.
    this.name = `ort:${o.variant ?? "model"}${o.executionProvider === "wasm" ? ":wasm" : ""}`;
  }

  /** Loads the export; `_modelDir` (Kiln's checkpoint) only names the weights it was made of. */
  async setup(_modelDir: string): Promise<string | undefined> {
    const o = this.options;
    this.engine = new OrtEngine({
      files: dirFiles(o.onnxDir),
      name: o.onnxDir,
      variant: o.variant ?? "model",
      maxNumSeqs: o.maxNumSeqs,
      ...(o.executionProvider ? { executionProvider: o.executionProvider } : {}),
    });
    this.config = await this.engine.start(0n);
    return undefined;
  }
}
