/**
 * llama.cpp's own quantizer, through Deno FFI on node-llama-cpp's prebuilt `libllama` (a dev-only
 * peer in `tools/peers/node_modules`; it loads the `libggml*.so` beside it): the function
 * `llama-quantize` calls, `llama_model_quantize(in, out, &params)`, with llama.cpp's default
 * parameters but for the file type and one thread. Nothing in `src/` uses it.
 */
import { ensurePeerDeps, peersDir } from "./deps.ts";

const BINS = "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/";
const PACKAGE = "node_modules/node-llama-cpp/";

/**
 * `struct llama_model_quantize_params` (include/llama.h of the bundled source): nthread, ftype,
 * output_tensor_type, token_embedding_type (i32 each), six bools (allow_requantize,
 * quantize_output_tensor, only_copy, pure, keep_split, dry_run), four pointers (imatrix,
 * kv_overrides, tt_overrides, prune_layers) and max_buf_size. Deno lays it out as C does.
 */
const PARAMS = {
  struct: [
    "i32",
    "i32",
    "i32",
    "i32",
    "u8",
    "u8",
    "u8",
    "u8",
    "u8",
    "u8",
    "pointer",
    "pointer",
    "pointer",
    "pointer",
    "usize",
  ],
} as const;
/** Byte offsets of the fields set here. */
const NTHREAD = 0;
const FTYPE = 4;

const symbols = {
  llama_backend_init: { parameters: [], result: "void" },
  llama_version: { parameters: [], result: "pointer" },
  llama_log_set: { parameters: ["function", "pointer"], result: "void" },
  llama_ftype_name: { parameters: ["i32"], result: "pointer" },
  llama_model_quantize_default_params: { parameters: [], result: PARAMS },
  llama_model_quantize: {
    parameters: ["buffer", "buffer", "buffer"],
    result: "u32",
  },
} as const satisfies Deno.ForeignLibraryInterface;

/**
 * The `enum llama_ftype` values of the file types quantized without an importance matrix (and
 * MXFP4_MOE), by llama.cpp's names less the `LLAMA_FTYPE_MOSTLY_` prefix.
 */
export const FTYPES = {
  Q4_0: 2,
  Q4_1: 3,
  Q8_0: 7,
  Q5_0: 8,
  Q5_1: 9,
  Q2_K: 10,
  Q3_K_S: 11,
  Q3_K_M: 12,
  Q3_K_L: 13,
  Q4_K_S: 14,
  Q4_K_M: 15,
  Q5_K_S: 16,
  Q5_K_M: 17,
  Q6_K: 18,
  IQ4_NL: 25,
  IQ4_XS: 30,
  TQ1_0: 36,
  TQ2_0: 37,
  MXFP4_MOE: 38,
} as const;

/** The file types llama.cpp documents as needing an importance matrix (tried, never kept). */
export const IMATRIX_FTYPES = {
  IQ2_XXS: 19,
  IQ2_XS: 20,
  Q2_K_S: 21,
  IQ3_XS: 22,
  IQ3_XXS: 23,
  IQ1_S: 24,
  IQ3_S: 26,
  IQ3_M: 27,
  IQ2_S: 28,
  IQ2_M: 29,
  IQ1_M: 31,
} as const;

const ALL_FTYPES = { ...FTYPES, ...IMATRIX_FTYPES };
export type Ftype = keyof typeof ALL_FTYPES;

/** The llama.cpp build these binaries were made from. */
export interface LlamaCppVersion {
  /** `llama_version()`. */
  version: string;
  /** The release node-llama-cpp names (`llama/llama.cpp.info.json`). */
  release: string;
  /** node-llama-cpp's package version. */
  nodeLlamaCpp: string;
  /** The commit of the source bundle shipped with it (`llama/gitRelease.bundle`). */
  bundleCommit: string;
}

export interface LlamaQuantizer {
  version: LlamaCppVersion;
  /** llama.cpp's description of a file type, e.g. `Q4_K - Medium`. */
  ftypeName(ftype: Ftype): string;
  /**
   * Quantize the GGUF file `input` into `output` as `ftype`: undefined on success, else
   * llama.cpp's error lines (it returns non-zero and logs why).
   */
  quantize(input: string, output: string, ftype: Ftype): string | undefined;
  close(): void;
}

/** The llama.cpp release, package version and source commit of the peer's binaries. */
export async function llamaCppVersion(): Promise<LlamaCppVersion> {
  const lib = Deno.dlopen(`${peersDir}${BINS}libllama.v0.5.0.so`, {
    llama_version: symbols.llama_version,
  });
  const version = new Deno.UnsafePointerView(lib.symbols.llama_version()!)
    .getCString();
  lib.close();
  const info = JSON.parse(
    await Deno.readTextFile(`${peersDir}${PACKAGE}llama/llama.cpp.info.json`),
  ) as { tag: string };
  const pkg = JSON.parse(
    await Deno.readTextFile(`${peersDir}${PACKAGE}package.json`),
  ) as { version: string };
  return {
    version,
    release: info.tag,
    nodeLlamaCpp: pkg.version,
    bundleCommit: await bundleCommit(),
  };
}

async function bundleCommit(): Promise<string> {
  const out = await new Deno.Command("git", {
    args: [
      "bundle",
      "list-heads",
      `${peersDir}${PACKAGE}llama/gitRelease.bundle`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const head = /^([0-9a-f]{40}) HEAD$/m.exec(
    new TextDecoder().decode(out.stdout),
  );
  if (!out.success || head === null) {
    throw new Error("cannot read llama.cpp's source bundle");
  }
  return head[1]!;
}

/**
 * Open libllama. Its log goes to `log` (llama.cpp prints a line per tensor); warnings and errors
 * of the current `quantize` call are also kept for its result.
 */
export async function openLlamaQuantizer(
  log: (line: string) => void = () => {},
): Promise<LlamaQuantizer> {
  await ensurePeerDeps();
  const lib = Deno.dlopen(`${peersDir}${BINS}libllama.v0.5.0.so`, symbols);
  const s = lib.symbols;
  const cString = (p: Deno.PointerValue) =>
    p === null ? "" : new Deno.UnsafePointerView(p).getCString();
  let errors: string[] = [];
  // The quantizer runs on this thread (nthread 1), so a plain callback is safe.
  const callback = new Deno.UnsafeCallback(
    { parameters: ["i32", "pointer", "pointer"], result: "void" } as const,
    (level, text) => {
      const line = cString(text);
      // Error lines, less the rules of '=' llama.cpp frames some with.
      if (level === 4) {
        errors.push(
          ...line.split("\n").map((l) => l.trim()).filter((l) => !/^=*$/.test(l)),
        );
      }
      log(line);
    },
  );
  s.llama_log_set(callback.pointer, null);
  s.llama_backend_init();
  const cstr = (text: string) => new TextEncoder().encode(`${text}\0`);
  return {
    version: await llamaCppVersion(),
    ftypeName: (ftype) => cString(s.llama_ftype_name(ALL_FTYPES[ftype])),
    quantize(input, output, ftype) {
      const params = s.llama_model_quantize_default_params();
      const view = new DataView(
        params.buffer,
        params.byteOffset,
        params.byteLength,
      );
      view.setInt32(NTHREAD, 1, true);
      view.setInt32(FTYPE, ALL_FTYPES[ftype], true);
      errors = [];
      const rc = s.llama_model_quantize(cstr(input), cstr(output), params);
      return rc === 0 ? undefined : errors.join("\n") || `llama_model_quantize returned ${rc}`;
    },
    close() {
      s.llama_log_set(null, null);
      callback.close();
      lib.close();
    },
  };
}
