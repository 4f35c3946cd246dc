/**
 * GGUF models: a `ModelConfig` from the metadata and the tensors under HF names (ggml
 * block-quantized types kept as they are), from one file or a split set, local or remote.
 * @module
 */
export { ggufConfig } from "./config.ts";
export {
  type GgufModel,
  llama3FromFreqFactors,
  openGguf,
  openGgufBlobs,
  openGgufFiles,
  openGgufUrl,
  type OpenSource,
  splitNames,
} from "./load.ts";
export {
  type GgufTensorInfo,
  hfTensorName,
  hfTensors,
  type RopeInterleave,
  unpermuteQkRows,
} from "./tensors.ts";
