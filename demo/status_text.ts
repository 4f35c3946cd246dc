/**
 * The demo's status lines: a download's (bytes, bytes/s and time left, per file and overall), and
 * the ready line (adapter, load time, whether the engine is shared by the origin's tabs, and the
 * GPU memory the engine's ledger counts).
 */
import type { EngineConfig } from "../src/contract/types.ts";
import type { DownloadProgress, TransferProgress } from "../src/formats/source.ts";

const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

/** `12.3 / 45.6 MB, 7.8 MB/s, 4 s left` (the rate and time left once known). */
export function transferText(p: TransferProgress): string {
  const parts = [`${(p.loaded / 1e6).toFixed(1)} / ${mb(p.total)}`];
  if (p.bytesPerSecond > 0) parts.push(`${mb(p.bytesPerSecond)}/s`);
  if (p.secondsLeft !== undefined) parts.push(`${Math.ceil(p.secondsLeft)} s left`);
  return parts.join(", ");
}

/** The status line of a download: the file, then the whole model. */
export function downloadText(p: DownloadProgress): string {
  return `downloading ${p.file}: ${transferText(p.fileProgress)}; all files: ${
    transferText(p.overall)
  }`;
}

/** `GPU memory: weights 9.6 MB, KV 4.2 MB, total 15.0 MB`, from `runtime_data`; "" without it. */
export function gpuMemoryText(config: EngineConfig): string {
  const m = config.runtime_data?.gpu_memory_bytes as Record<string, number> | undefined;
  if (typeof m?.total !== "number") return "";
  return `GPU memory: weights ${mb(m.weights ?? 0)}, KV ${mb(m.kv ?? 0)}, total ${mb(m.total)}`;
}

/** What the ready line says of the engine's host. */
export interface EngineHost {
  /**
   * `origin`: one engine for every tab of the origin (the shared worker); `service-worker`: the
   * same, hosted by the app's service worker; `none`: this tab's own.
   */
  sharing: "origin" | "service-worker" | "none";
  /** Tabs attached to the shared engine, this one included (when the host says). */
  tabs?: number | undefined;
}

/** `ready: <adapter>, loaded in 1.2 s; engine shared by 2 tabs of this origin; GPU memory: …` */
export function readyText(config: EngineConfig, seconds: number, host: EngineHost): string {
  const shared = host.sharing !== "none"
    ? `engine shared${
      host.tabs === undefined ? "" : ` by ${host.tabs} tab${host.tabs === 1 ? "" : "s"}`
    } of this origin${host.sharing === "service-worker" ? " (in its service worker)" : ""}`
    : "engine: this tab's own";
  const adapter = config.runtime_data?.adapter ?? "WebGPU";
  return [`ready: ${adapter}, loaded in ${seconds.toFixed(1)} s`, shared, gpuMemoryText(config)]
    .filter((s) => s !== "").join("; ");
}
