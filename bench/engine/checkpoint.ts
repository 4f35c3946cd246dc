/**
 * Random-weight checkpoints of real model shapes, for benchmarks: `ensureCheckpoint("smollm2-135m")`
 * returns a directory holding the shape's HF `config.json` (`bench/engine/shapes/<shape>.json`) and a
 * `model.safetensors` of deterministic F16 weights (`random_weights.ts`), generating it on
 * first use under `.cache/kiln-bench/<shape>/`. The file is written tensor by tensor in chunks
 * (Llama-3.2-1B's 2.5 GB never sits in memory), hashed with SHA-256 as it is written, and
 * checked against `bench/engine/shapes/sha256.json` when that names the shape: the same bytes on every
 * machine. `kiln-bench.json` beside it records the generator, seed, size and hash; a later call
 * reuses the directory when they still match (`verify: true` re-hashes the file too).
 *
 * `layers: N` keeps the shape's first N decoder layers and nothing else changes (every width,
 * every expert, the embedding and the head): `.cache/kiln-bench/<shape>-first<N>/`, whose
 * `config.json` says N layers and whose manifest records `layers: { kept: N, of: total }`. A
 * tensor's bytes depend only on the seed and its name, so those layers are byte for byte the
 * full checkpoint's: a model too large for the machine is benched as a slice of itself.
 */
import { createHash } from "node:crypto";
import { EngineError } from "../../src/contract/errors.ts";
import { parseConfig } from "../../src/model/config.ts";
import { elements, GENERATOR, tensorFiller, tensorSpecs } from "./random_weights.ts";

export interface CheckpointOptions {
  /** Where generated checkpoints go (default `.cache/kiln-bench/` in the repository). */
  cacheDir?: string;
  /** Where `<shape>.json` and `sha256.json` live (default `bench/engine/shapes/`). */
  shapesDir?: string;
  /** Seed of the weights (default "kiln-bench"); a non-default seed skips the known-hash check. */
  seed?: string;
  /** Re-hash an existing `model.safetensors` before reusing it. */
  verify?: boolean;
  /** Keep only the first N decoder layers (1 to the shape's count). */
  layers?: number;
  /** Progress and the hash (default: stderr). */
  log?: (line: string) => void;
}

/** What `kiln-bench.json` records beside a generated checkpoint. */
export interface CheckpointManifest {
  shape: string;
  generator: string;
  seed: string;
  config_sha256: string;
  bytes: number;
  sha256: string;
  /** A slice of the shape: its first `kept` layers of `of`. */
  layers?: { kept: number; of: number };
}

const DEFAULT_SEED = "kiln-bench";
const CHUNK = 1 << 22; // values per write (8 MiB)

const sha256 = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

/** A file URL's path, without a trailing slash. */
function dirPath(u: URL): string {
  return decodeURIComponent(u.pathname).replace(/\/$/, "");
}

async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(path)) as T;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** Names of the shapes in `shapesDir` (every `<name>.json` but `sha256.json`). */
export async function listShapes(opts: CheckpointOptions = {}): Promise<string[]> {
  const dir = opts.shapesDir ?? dirPath(new URL("./shapes/", import.meta.url));
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && e.name.endsWith(".json") && e.name !== "sha256.json") {
      out.push(e.name.slice(0, -5));
    }
  }
  return out.sort();
}

/** The directory of `shape`'s random-weight checkpoint, generated on first use. */
export async function ensureCheckpoint(
  shape: string,
  opts: CheckpointOptions = {},
): Promise<string> {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(shape)) {
    throw EngineError.invalidArgument(`shape name ${JSON.stringify(shape)} is not a plain name`);
  }
  const log = opts.log ?? ((l: string) => console.error(l));
  const shapesDir = opts.shapesDir ?? dirPath(new URL("./shapes/", import.meta.url));
  const cacheRoot = opts.cacheDir ?? dirPath(new URL("../../.cache/kiln-bench/", import.meta.url));
  const seed = opts.seed ?? DEFAULT_SEED;
  let configText: string;
  try {
    configText = await Deno.readTextFile(`${shapesDir}/${shape}.json`);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    const known = await listShapes({ shapesDir }).catch(() => []);
    throw EngineError.invalidArgument(
      `no shape ${shape} in ${shapesDir} (known: ${known.join(", ") || "none"})`,
    );
  }
  let slice: CheckpointManifest["layers"];
  if (opts.layers !== undefined) {
    const raw = JSON.parse(configText) as Record<string, unknown>;
    const of = parseConfig(raw).numLayers;
    if (!Number.isInteger(opts.layers) || opts.layers < 1 || opts.layers > of) {
      throw EngineError.invalidArgument(
        `layers: ${opts.layers} is not a whole number from 1 to ${shape}'s ${of} layers`,
      );
    }
    slice = { kept: opts.layers, of };
    configText = JSON.stringify(sliceConfig(raw, opts.layers), null, 2) + "\n";
  }
  const config = parseConfig(configText);
  const dir = `${cacheRoot}/${slice ? `${shape}-first${slice.kept}` : shape}`;
  // sha256.json holds whole shapes' hashes.
  const known = seed === DEFAULT_SEED && !slice
    ? (await readJson<Record<string, string>>(`${shapesDir}/sha256.json`))?.[shape]
    : undefined;
  const want = {
    shape,
    generator: GENERATOR,
    seed,
    config_sha256: sha256(configText),
    ...(slice ? { layers: slice } : {}),
  };
  const have = await readJson<CheckpointManifest>(`${dir}/kiln-bench.json`);
  if (
    have && have.generator === want.generator && have.seed === want.seed &&
    have.config_sha256 === want.config_sha256 && (known === undefined || have.sha256 === known)
  ) {
    const size = await Deno.stat(`${dir}/model.safetensors`).then((s) => s.size, () => -1);
    if (
      size === have.bytes &&
      (!opts.verify || await hashFile(`${dir}/model.safetensors`) === have.sha256)
    ) {
      return dir;
    }
    log(`checkpoint ${shape}: ${dir} does not match its manifest, generating it again`);
  }
  await Deno.mkdir(dir, { recursive: true });
  await Deno.remove(`${dir}/kiln-bench.json`).catch(() => {});
  const t0 = performance.now();
  const { bytes, hash } = await writeSafetensors(
    `${dir}/model.safetensors`,
    seed,
    tensorSpecs(config),
    (done, total) =>
      log(
        `checkpoint ${shape}: ${(done / 2 ** 20).toFixed(0)} / ${(total / 2 ** 20).toFixed(0)} MiB`,
      ),
  );
  if (known !== undefined && hash !== known) {
    throw new EngineError(
      "Unknown",
      `checkpoint ${shape}: sha256 ${hash} differs from the known ${known} (bench/engine/shapes/sha256.json): the generator is not deterministic here, or the shape changed (then update that file)`,
    );
  }
  await Deno.writeTextFile(`${dir}/config.json`, configText);
  const manifest: CheckpointManifest = { ...want, bytes, sha256: hash };
  await Deno.writeTextFile(`${dir}/kiln-bench.json`, JSON.stringify(manifest, null, 2) + "\n");
  log(
    `checkpoint ${shape}: ${bytes} bytes in ${
      ((performance.now() - t0) / 1000).toFixed(1)
    } s, sha256 ${hash}${
      known === undefined ? " (no known hash to check)" : " (matches the known hash)"
    }`,
  );
  return dir;
}

/**
 * An HF config cut to its first `n` layers: `num_hidden_layers`, and the per-layer lists a hybrid
 * family keeps beside it (`layer_types` cut to `n` entries, `full_attn_idxs` to indices below `n`).
 */
export function sliceConfig(raw: Record<string, unknown>, n: number): Record<string, unknown> {
  const out: Record<string, unknown> = { ...raw, num_hidden_layers: n };
  if (Array.isArray(raw.layer_types)) out.layer_types = raw.layer_types.slice(0, n);
  if (Array.isArray(raw.full_attn_idxs)) {
    out.full_attn_idxs = raw.full_attn_idxs.filter((i) => typeof i === "number" && i < n);
  }
  return out;
}

/** The manifest of a generated checkpoint directory, if it has one. */
export function readManifest(dir: string): Promise<CheckpointManifest | undefined> {
  return readJson<CheckpointManifest>(`${dir}/kiln-bench.json`);
}

/** SHA-256 of a file, read in chunks. */
export async function hashFile(path: string): Promise<string> {
  const h = createHash("sha256");
  using f = await Deno.open(path, { read: true });
  const buf = new Uint8Array(1 << 23);
  for (;;) {
    const n = await f.read(buf);
    if (n === null) break;
    h.update(buf.subarray(0, n));
  }
  return h.digest("hex");
}

async function writeAll(f: Deno.FsFile, data: Uint8Array): Promise<void> {
  let off = 0;
  while (off < data.length) off += await f.write(data.subarray(off));
}

/**
 * Write a safetensors file of F16 tensors to `path` (through `path.partial`, renamed when
 * complete), returning its size and SHA-256.
 */
export async function writeSafetensors(
  path: string,
  seed: string,
  specs: ReturnType<typeof tensorSpecs>,
  progress?: (doneBytes: number, totalBytes: number) => void,
): Promise<{ bytes: number; hash: string }> {
  const header: Record<string, unknown> = {
    __metadata__: { format: "pt", generator: GENERATOR, seed },
  };
  let offset = 0;
  for (const t of specs) {
    const len = elements(t) * 2;
    header[t.name] = { dtype: "F16", shape: t.shape, data_offsets: [offset, offset + len] };
    offset += len;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - ((8 + json.length) % 8)) % 8); // data starts 8-byte aligned
  const head = new Uint8Array(8 + json.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(json.length), true);
  head.set(new TextEncoder().encode(json), 8);
  const hash = createHash("sha256");
  const partial = `${path}.partial`;
  const buf = new Uint16Array(CHUNK);
  const bytes = new Uint8Array(buf.buffer);
  let done = 0, reported = 0;
  {
    using f = await Deno.open(partial, { write: true, create: true, truncate: true });
    await writeAll(f, head);
    hash.update(head);
    for (const t of specs) {
      const next = tensorFiller(seed, t);
      for (let left = elements(t); left > 0;) {
        const n = Math.min(left, CHUNK);
        next(buf.subarray(0, n));
        const chunk = bytes.subarray(0, n * 2);
        await writeAll(f, chunk);
        hash.update(chunk);
        left -= n;
        done += n * 2;
      }
      if (progress && done - reported >= 256 * 2 ** 20) {
        progress(done, offset);
        reported = done;
      }
    }
  }
  if (progress && reported < done) progress(done, offset);
  await Deno.rename(partial, path);
  return { bytes: head.length + offset, hash: hash.digest("hex") };
}
