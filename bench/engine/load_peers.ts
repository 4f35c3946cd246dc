/**
 * The peers a `deno task bench` run times beside Kiln: `--peers` (bench/peers/mod.ts, its own
 * packages, optionally `--only` some), and `--engine ort` (onnxruntime-web's `OrtEngine` on an
 * ONNX export of the same weights).
 *
 * @module
 */
import { modelName } from "../../src/formats/source.ts";
import type { Peer } from "../../tools/peers/peer.ts";

/** What `loadPeers` reads of the command line. */
export interface PeerFlags {
  peers?: boolean;
  only?: string[];
  /** `--engine ort`: its export (`--onnx`, else fortune's own when `modelDir` is fortune). */
  ort?: {
    maxNumSeqs: number;
    onnx?: string;
    modelDir?: string;
    variant?: string;
    ep?: "webgpu" | "wasm";
  };
}

/** The peers asked for; `fail` reports a bad flag (and exits). */
export async function loadPeers(
  flags: PeerFlags,
  fail: (message: string) => never,
  log: (line: string) => void,
): Promise<Peer[]> {
  let peers: Peer[] = [];
  if (flags.peers) {
    const url = new URL("../peers/mod.ts", import.meta.url).href;
    try {
      peers = ((await import(url)) as { peers: Peer[] }).peers;
    } catch (e) {
      throw new Error(`--peers: ${url} could not be loaded: ${(e as Error).message}`);
    }
    const only = flags.only;
    const unknownPeer = only?.find((n) => !peers.some((p) => p.name === n));
    if (unknownPeer !== undefined) {
      fail(`--only: no peer ${unknownPeer} (${peers.map((p) => p.name).join(", ")})`);
    }
    if (only) peers = peers.filter((p) => only.includes(p.name));
    log(`peers: ${peers.map((p) => p.name).join(", ") || "none"}`);
  }
  if (flags.ort) peers.push(await ortRunner(flags.ort));
  return peers;
}

/** OrtEngine on `onnx`, or on fortune's own export when the model is fortune. */
async function ortRunner(o: NonNullable<PeerFlags["ort"]>): Promise<Peer> {
  let onnxDir = o.onnx;
  if (onnxDir === undefined) {
    if (o.modelDir === undefined || modelName(o.modelDir) !== "fortune") {
      throw new Error("--engine ort: --onnx DIR (an ONNX export of --model) is needed");
    }
    const { onnxFortune } = await import("../../test/support/onnx_fortune.ts");
    onnxDir = await onnxFortune();
  }
  const { OrtRunner } = await import("./ort_runner.ts");
  return new OrtRunner({
    onnxDir,
    maxNumSeqs: o.maxNumSeqs,
    ...(o.variant ? { variant: o.variant } : {}),
    ...(o.ep ? { executionProvider: o.ep } : {}),
  });
}
