/**
 * The way back: an HF checkpoint written as a (quantized) GGUF file llama.cpp loads, the
 * quantization mixes, and the tokenizer as GGUF metadata.
 * @module
 */
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
export * from "./writer.ts";
