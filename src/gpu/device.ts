/**
 * Acquire a WebGPU adapter and device with the features that help when present
 * (`shader-f16`, `subgroups`, `timestamp-query`) and the largest limits the adapter allows.
 */
import { EngineError } from "../contract/errors.ts";
import { chooseKernelPaths, isCpuAdapter, PATH_KINDS, type PathKind } from "./paths.ts";

/** Which compute paths the device supports; reported in `EngineConfig.runtime_data`. */
export interface GpuCapabilities {
  /** `shader-f16` is enabled. */
  f16: boolean;
  /** `subgroups` is enabled. */
  subgroups: boolean;
  /** `timestamp-query` is enabled. */
  timestamps: boolean;
  /** The adapter's vendor / architecture / description, for reports. */
  adapter: string;
  /** The device's `maxBufferSize` limit, in bytes. */
  maxBufferSize: number;
  /** The device's `maxStorageBufferBindingSize` limit, in bytes. */
  maxStorageBufferBindingSize: number;
  /** The device's `maxComputeWorkgroupStorageSize` limit, in bytes. */
  maxComputeWorkgroupStorageSize: number;
  /** The device's `maxComputeInvocationsPerWorkgroup` limit. */
  maxComputeInvocationsPerWorkgroup: number;
  /** A CPU implementation of WebGPU (see `isCpuAdapter`). */
  cpuAdapter: boolean;
  /** The kernel paths the device takes (see `paths.ts`). */
  paths: PathKind;
}

/** An acquired device and what it can do. */
export interface Gpu {
  /** The WebGPU device. */
  device: GPUDevice;
  /** Its features and limits. */
  caps: GpuCapabilities;
  /** Resolves with an EngineShutdown error when the device is lost. */
  lost: Promise<EngineError>;
}

/** How {@linkcode acquireGpu} picks the adapter and device. */
export interface AcquireOptions {
  /** Passed to `requestAdapter`. */
  powerPreference?: GPUPowerPreference;
  /** Turn off optional features (to test the fallback paths). */
  disable?: ReadonlyArray<"shader-f16" | "subgroups" | "timestamp-query">;
  /** The device's label (default `kiln-device`). */
  label?: string;
  /**
   * The kernel paths the device takes (see `paths.ts`): by default `cpu` on a fallback (CPU)
   * adapter and `gpu` otherwise. `gpu` makes a CPU adapter run every kernel a GPU runs.
   */
  paths?: PathKind;
}

const NO_WEBGPU = "WebGPU is not available: navigator.gpu is missing. In a browser, use a recent " +
  "Chrome/Edge (or Chromium with --enable-unsafe-webgpu) on a secure origin (https or " +
  "http://localhost); under Deno 2.x WebGPU is built in; on Linux without a GPU install Mesa's " +
  "Vulkan drivers (Debian: apt-get install mesa-vulkan-drivers) for a CPU adapter.";

const LIMITS = [
  "maxBufferSize",
  "maxStorageBufferBindingSize",
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY",
  "maxComputeWorkgroupsPerDimension",
  "maxStorageBuffersPerShaderStage",
] as const;

/**
 * Acquire an adapter and a device with every optional feature it has (unless disabled) and the
 * adapter's largest limits. Throws `CannotConnect` when WebGPU, an adapter or a device is
 * unavailable.
 */
export async function acquireGpu(options: AcquireOptions = {}): Promise<Gpu> {
  // Typed structurally: pages have Navigator, workers WorkerNavigator, Deno workers neither name.
  if (options.paths !== undefined && !PATH_KINDS.includes(options.paths)) {
    throw EngineError.invalidArgument(
      `kernel paths must be one of ${PATH_KINDS.join(", ")}, got ${JSON.stringify(options.paths)}`,
    );
  }
  const gpu = (globalThis as { navigator?: { gpu?: GPU } }).navigator?.gpu;
  if (gpu === undefined) throw new EngineError("CannotConnect", NO_WEBGPU);
  const adapter = await gpu.requestAdapter(
    options.powerPreference === undefined ? {} : { powerPreference: options.powerPreference },
  );
  if (adapter === null) {
    throw new EngineError(
      "CannotConnect",
      "WebGPU is present but no adapter was found. Check GPU drivers; on Linux without a GPU " +
        "install Mesa's Vulkan drivers (Debian: apt-get install mesa-vulkan-drivers).",
    );
  }
  const disabled = new Set<string>(options.disable ?? []);
  const wanted: GPUFeatureName[] = [];
  for (const f of ["shader-f16", "subgroups", "timestamp-query"] as const) {
    if (adapter.features.has(f) && !disabled.has(f)) wanted.push(f);
  }
  const requiredLimits: Record<string, number> = {};
  for (const k of LIMITS) requiredLimits[k] = adapter.limits[k];
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({
      label: options.label ?? "kiln-device",
      requiredFeatures: wanted,
      requiredLimits,
    });
  } catch (e) {
    throw new EngineError("CannotConnect", `requestDevice failed: ${(e as Error).message}`, {
      cause: e,
    });
  }
  const paths = chooseKernelPaths(device, options.paths);
  const info = adapter.info;
  const caps: GpuCapabilities = {
    f16: device.features.has("shader-f16"),
    subgroups: device.features.has("subgroups"),
    timestamps: device.features.has("timestamp-query"),
    adapter: [info?.vendor, info?.architecture, info?.description].filter((s) => s).join(" / "),
    maxBufferSize: device.limits.maxBufferSize,
    maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize,
    maxComputeWorkgroupStorageSize: device.limits.maxComputeWorkgroupStorageSize,
    maxComputeInvocationsPerWorkgroup: device.limits.maxComputeInvocationsPerWorkgroup,
    cpuAdapter: isCpuAdapter(device),
    paths: paths.kind,
  };
  const lost = device.lost.then((i) =>
    new EngineError("EngineShutdown", `GPU device lost (${i.reason}): ${i.message}`)
  );
  return { device, caps, lost };
}

/**
 * Which compute paths the kernels take on this device, for `EngineConfig.runtime_data`.
 * Kiln's kernels compute in f32: F16/BF16 weights are widened in-kernel, so `shader-f16` and
 * `subgroups` are reported but not required (no kernel uses subgroups). Decode products give each
 * thread whole output rows on the `cpu` kernel paths and reduce 32 threads per row through
 * workgroup memory on the `gpu` paths.
 */
export function runtimeData(caps: GpuCapabilities): Record<string, unknown> {
  return {
    adapter: caps.adapter,
    compute: "f32",
    reductions: "workgroup",
    cpu_adapter: caps.cpuAdapter,
    kernel_paths: caps.paths,
    decode_products: caps.paths === "cpu" ? "rows per thread" : "32 threads per row",
    shader_f16_available: caps.f16,
    subgroups_available: caps.subgroups,
    timestamp_query: caps.timestamps,
    max_storage_buffer_binding_size: caps.maxStorageBufferBindingSize,
  };
}
