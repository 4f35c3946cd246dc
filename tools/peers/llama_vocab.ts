/**
 * llama.cpp's tokenizer through Deno FFI on node-llama-cpp's prebuilt `libllama` (a dev-only peer
 * in `tools/peers/node_modules`): a GGUF file loaded with `vocab_only` (metadata and vocabulary,
 * no tensors), then `llama_tokenize` and `llama_detokenize` as any llama.cpp program calls them.
 * Nothing in `src/` uses it.
 */
import { ensurePeerDeps, peersDir } from "./deps.ts";
import { type LlamaCppVersion, llamaCppVersion } from "./llama_lib.ts";

const BINS = "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/";

/**
 * `struct llama_model_params` (include/llama.h of the bundled source): devices and
 * tensor_buft_overrides (pointers), n_gpu_layers, split_mode, load_mode, lazy_mode, main_gpu
 * (i32 each), tensor_split, progress_callback, its user data, kv_overrides (pointers), then six
 * bools, the first `vocab_only`. Deno lays it out as C does (80 bytes).
 */
const MODEL_PARAMS = {
  struct: [
    "pointer",
    "pointer",
    "i32",
    "i32",
    "i32",
    "i32",
    "i32",
    "pointer",
    "pointer",
    "pointer",
    "pointer",
    "u8",
    "u8",
    "u8",
    "u8",
    "u8",
    "u8",
  ],
} as const;
/** Byte offset of `vocab_only`. */
const VOCAB_ONLY = 72;

const symbols = {
  llama_backend_init: { parameters: [], result: "void" },
  llama_log_set: { parameters: ["function", "pointer"], result: "void" },
  llama_model_default_params: { parameters: [], result: MODEL_PARAMS },
  llama_model_load_from_file: {
    parameters: ["buffer", MODEL_PARAMS],
    result: "pointer",
  },
  llama_model_free: { parameters: ["pointer"], result: "void" },
  llama_model_get_vocab: { parameters: ["pointer"], result: "pointer" },
  llama_vocab_get_add_bos: { parameters: ["pointer"], result: "bool" },
  llama_vocab_get_add_eos: { parameters: ["pointer"], result: "bool" },
  llama_tokenize: {
    parameters: ["pointer", "buffer", "i32", "buffer", "i32", "bool", "bool"],
    result: "i32",
  },
  llama_detokenize: {
    parameters: ["pointer", "buffer", "i32", "buffer", "i32", "bool", "bool"],
    result: "i32",
  },
} as const satisfies Deno.ForeignLibraryInterface;

/** One GGUF file's vocabulary in llama.cpp. */
export interface LlamaVocab {
  /** Whether `add_special` adds BOS, and EOS (the file's flags or the type's defaults). */
  addBos: boolean;
  addEos: boolean;
  /** `llama_tokenize(text, add_special, parse_special)`. */
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): number[];
  /** `llama_detokenize(ids, remove_special, unparse_special)`, its bytes as UTF-8 (lossy). */
  detokenize(ids: readonly number[], removeSpecial: boolean, unparseSpecial: boolean): string;
  close(): void;
}

export interface LlamaTokenizers {
  version: LlamaCppVersion;
  /** Load `file`'s vocabulary (`vocab_only`); llama.cpp's error lines if it refuses. */
  open(file: string): LlamaVocab;
  close(): void;
}

/** Open libllama. Its log goes to `log`. */
export async function openLlamaTokenizers(
  log: (level: number, line: string) => void = () => {},
): Promise<LlamaTokenizers> {
  await ensurePeerDeps();
  const lib = Deno.dlopen(`${peersDir}${BINS}libllama.v0.5.0.so`, symbols);
  const s = lib.symbols;
  const callback = new Deno.UnsafeCallback(
    { parameters: ["i32", "pointer", "pointer"], result: "void" } as const,
    (level, text) => log(level, text === null ? "" : new Deno.UnsafePointerView(text).getCString()),
  );
  s.llama_log_set(callback.pointer, null);
  s.llama_backend_init();
  const utf8 = new TextEncoder();
  return {
    version: await llamaCppVersion(),
    open(file) {
      const params = new Uint8Array(s.llama_model_default_params());
      params[VOCAB_ONLY] = 1;
      const model = s.llama_model_load_from_file(utf8.encode(`${file}\0`), params);
      if (model === null) throw new Error(`llama.cpp refused ${file}`);
      const vocab = s.llama_model_get_vocab(model);
      const tokenize = (text: string, addSpecial: boolean, parseSpecial: boolean) => {
        const bytes = utf8.encode(text);
        const call = (out: Int32Array) =>
          s.llama_tokenize(
            vocab,
            bytes,
            bytes.length,
            u8(out),
            out.length,
            addSpecial,
            parseSpecial,
          );
        return [...retry(bytes.length + 8, (n) => new Int32Array(n), call)];
      };
      const detokenize = (ids: readonly number[], removeSpecial: boolean, unparse: boolean) => {
        const tokens = Int32Array.from(ids);
        const call = (out: Uint8Array) =>
          s.llama_detokenize(
            vocab,
            u8(tokens),
            ids.length,
            out,
            out.length,
            removeSpecial,
            unparse,
          );
        return new TextDecoder().decode(
          retry(64 + 16 * ids.length, (n) => new Uint8Array(n), call),
        );
      };
      return {
        addBos: s.llama_vocab_get_add_bos(vocab),
        addEos: s.llama_vocab_get_add_eos(vocab),
        tokenize,
        detokenize,
        close: () => s.llama_model_free(model),
      };
    },
    close() {
      s.llama_log_set(null, null);
      callback.close();
      lib.close();
    },
  };
}

const u8 = (a: Int32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/**
 * `call(buffer)` with a buffer of `n` elements, then, if llama.cpp answers with the negative of
 * the size it needs, once more with that size; the filled part of the buffer.
 */
function retry<T extends Int32Array | Uint8Array>(
  n: number,
  make: (n: number) => T,
  call: (buffer: T) => number,
): T {
  let buffer = make(n);
  let got = call(buffer);
  if (got < 0) {
    buffer = make(-got);
    got = call(buffer);
  }
  if (got < 0) throw new Error(`llama.cpp asked for ${-got} elements twice`);
  return buffer.subarray(0, got) as T;
}
