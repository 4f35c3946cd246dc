/**
 * GGUF models: headers read through a `ByteSource` by `@huggingface/gguf`, a `ModelConfig`
 * from the metadata, tensors under HF names (ggml block-quantized types kept as they are), and
 * the tokenizer and chat template stored in the file.
 * @module
 */
export { ggufConfig } from "./config.ts";
export {
  dtypeOfGgml,
  ggmlTypeName,
  type GgufDtype,
  type GgufFile,
  type GgufTensor,
  readGgufFile,
} from "./header.ts";
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
export { GgufMetadata, shortestF32 } from "./metadata.ts";
export {
  type GgufTensorInfo,
  hfTensorName,
  hfTensors,
  type RopeInterleave,
  unpermuteQkRows,
} from "./tensors.ts";
export { ggufText, type GgufTokenizer, ggufTokenizer, spmMerges, TOKEN_TYPE } from "./tokenizer.ts";
