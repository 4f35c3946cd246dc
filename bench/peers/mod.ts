/** The benchmark's peers: llama.cpp (Vulkan, then CPU) and onnxruntime-web's WebGPU EP. */
import { LlamaCppPeer } from "./llama_cpp.ts";
import { OrtWebGpuPeer } from "./ort_web.ts";
import type { Peer } from "./peer.ts";

export type { Peer } from "./peer.ts";
export { ensurePeerDeps } from "./deps.ts";

export const peers: Peer[] = [
  new LlamaCppPeer("llama.cpp", "vulkan"),
  new LlamaCppPeer("llama.cpp-cpu", false),
  new OrtWebGpuPeer(),
];
