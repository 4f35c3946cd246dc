/**
 * The tokenizer and chat template a GGUF file stores, rebuilt as `tokenizer.json` and
 * `tokenizer_config.json`, with the pre-tokenizers `tokenizer.ggml.pre` names.
 * @module
 */
export { ggufText, type GgufTokenizer, ggufTokenizer, spmMerges, TOKEN_TYPE } from "./tokenizer.ts";
