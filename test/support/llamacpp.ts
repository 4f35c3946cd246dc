/**
 * `test/fixtures/llamacpp/manifest.json`: GGUF files quantized by llama.cpp itself
 * (`tools/fixtures/llama_quantize.ts` writes them and this manifest; the tests read both).
 */
import { parseGgufHeader } from "../../src/formats/gguf/lib.ts";

/** One committed file. */
export interface LlamaCppFile {
  /** The model's name in `test/support/models.ts`. */
  model: string;
  /** llama.cpp's file type (`LLAMA_FTYPE_MOSTLY_<ftype>`). */
  ftype: string;
  /** llama.cpp's description of it (`llama_ftype_name`). */
  ftype_name: string;
  /** The path below the manifest's folder. */
  file: string;
  bytes: number;
  sha256: string;
  /** Tensors per ggml type name. */
  tensor_types: Record<string, number>;
  /** Each tensor in file order: its name and ggml type number. */
  tensors: [string, number][];
}

/** A file type llama.cpp would not make for a model, with the error lines it logged. */
export interface Refusal {
  model: string;
  ftype: string;
  error: string;
}

/** A file llama.cpp made that is not committed, and why. */
export interface NotKept {
  model: string;
  ftype: string;
  bytes: number;
  reason: string;
  /** Its tensors per ggml type name, as JSON. */
  types: string;
}

export interface Manifest {
  generated_by: string;
  llama_cpp: {
    version: string;
    release: string;
    nodeLlamaCpp: string;
    bundleCommit: string;
  };
  /** ggml's name of each type number that occurs in the files. */
  ggml_types: Record<number, string>;
  files: LlamaCppFile[];
  refused: Refusal[];
  not_kept: NotKept[];
}

/** The folder of the committed files. */
export const LLAMACPP_DIR = new URL("../fixtures/llamacpp/", import.meta.url);

export async function readManifest(): Promise<Manifest> {
  return JSON.parse(
    await Deno.readTextFile(new URL("manifest.json", LLAMACPP_DIR)),
  ) as Manifest;
}

/** The manifest as JSON, each file, refusal and left-out file on one line. */
export function formatManifest(m: Manifest): string {
  const entries = Object.entries(m).map(([key, value]) => {
    const v = Array.isArray(value)
      ? `[\n${value.map((x) => `  ${JSON.stringify(x)}`).join(",\n")}\n ]`
      : JSON.stringify(value);
    return ` ${JSON.stringify(key)}: ${v}`;
  });
  return `{\n${entries.join(",\n")}\n}\n`;
}

/**
 * Each tensor of a GGUF file (name, ggml type number) in file order, read by the GGUF parser
 * alone: Kiln's loader refuses the types it cannot run, this does not.
 */
export async function tensorTypes(
  bytes: Uint8Array,
): Promise<[string, number][]> {
  const serve = (_input: unknown, init?: RequestInit): Promise<Response> => {
    const m = /^bytes=(\d+)-(\d+)$/.exec(
      new Headers(init?.headers).get("range") ?? "",
    );
    if (m === null) throw new Error("expected a Range request");
    const start = Math.min(Number(m[1]), bytes.byteLength);
    const end = Math.min(Number(m[2]) + 1, bytes.byteLength);
    return Promise.resolve(
      new Response(bytes.slice(start, end), {
        status: 206,
        headers: {
          "content-range": `bytes ${start}-${end}/${bytes.byteLength}`,
        },
      }),
    );
  };
  const parsed = await parseGgufHeader("https://kiln.invalid/model.gguf", {
    fetch: serve as typeof fetch,
  });
  return parsed.tensorInfos.map((t) => [t.name, Number(t.dtype)]);
}
