/**
 * The one place Kiln names `@huggingface/gguf`, the GGUF container parser it builds on (Kiln does
 * not parse the container itself). Everything else in `src/formats/gguf/` and `src/model/gguf/` imports from here.
 */
export {
  GGMLQuantizationType,
  gguf as parseGgufHeader,
  type GGUFParseOutput,
  type GGUFTensorInfo,
  type GGUFTypedMetadata,
  GGUFValueType,
  type MetadataValue,
  parseGgufShardFilename,
} from "@huggingface/gguf";
