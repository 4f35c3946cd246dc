/** The benchmark's peers: llama.cpp (Vulkan, then CPU) and onnxruntime-web's WebGPU EP. */
import { LlamaCppPeer } from "../../tools/peers/llama_cpp.ts";
import { OrtWebGpuPeer } from "./ort_web.ts";
import type { Peer } from "../../tools/peers/peer.ts";

export type { Peer } from "../../tools/peers/peer.ts";
export { ensurePeerDeps } from "../../tools/peers/deps.ts";

export const peers: Peer[] = [
  new LlamaCppPeer("llama.cpp", "vulkan"),
  new LlamaCppPeer("llama.cpp-cpu", false),
  new OrtWebGpuPeer(),
];
