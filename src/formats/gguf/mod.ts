/**
 * The GGUF container: headers read through a `ByteSource` by `@huggingface/gguf`, typed metadata
 * and the metadata value types.
 * @module
 */
export {
  dtypeOfGgml,
  ggmlTypeName,
  type GgufDtype,
  type GgufFile,
  type GgufTensor,
  readGgufFile,
} from "./header.ts";
export { GgufMetadata, shortestF32 } from "./metadata.ts";
export { type GgufValue, GgufValueType } from "./value_types.ts";
