/**
 * GGUF models: headers read through a `ByteSource` by `@huggingface/gguf`, a `ModelConfig`
 * from the metadata, tensors under HF names (ggml block-quantized types kept as they are), and
 * the tokenizer and chat template stored in the file; and the way back, an HF checkpoint
 * written as a (quantized) GGUF file llama.cpp loads.
 * @module
 */
export { ggufConfig } from "./config.ts";
export {
  type ConvertOptions,
  type ConvertReport,
  ggufMetadata,
  type HfCheckpoint,
  type PlannedTensor,
  planTensors,
  readHfCheckpoint,
  writeHfAsGguf,
} from "./convert.ts";
export {
  GGUF_MIXES,
  type GgufMix,
  type GgufTensorType,
  mixType,
  parseMix,
  useMoreBits,
} from "./quant_mix.ts";
export { type HfTokenizerFiles, tokenizerMetadata } from "./tokenizer_meta.ts";
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
