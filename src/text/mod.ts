/**
 * Text in, text out: tokenizers (byte-level and HF `tokenizer.json`), incremental
 * detokenisation, stop strings and chat templates.
 * @module
 */
export * from "./tokenizer.ts";
export * from "./detokenizer.ts";
export * from "./stop_strings.ts";
export * from "./chat.ts";
export * from "./load.ts";
