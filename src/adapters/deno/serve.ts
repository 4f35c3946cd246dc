/**
 * `deno task serve [--model DIR|FILE.gguf|URL] [--port 8080] [--host 127.0.0.1] [--api-key KEY]
 * [--allowed-hosts H,...] [--cors-origins O,...] [--engine webgpu|ort] ...` (`--help` lists every
 * flag, `serve_flags.ts` declares them): a `WorkerEngine` (the WebGPU engine, or with
 * `--engine ort` onnxruntime-web on an ONNX export folder, in a Deno Worker) behind the
 * OpenAI-compatible server, with `/metrics` for Prometheus and `/health`. Before loading it prints
 * whether authentication is on, the bind address and the limits in force. A `--model` path that
 * does not exist, a port in use or a model that cannot load ends it with one line and exit code 2.
 * Connections come through `http_front.ts`, which closes one whose request head is late
 * (`--header-timeout`) or that idles past `--keepalive-timeout`. SIGINT/SIGTERM drain (`/health`
 * 503, requests in flight finish or are cut at `--drain-timeout` seconds), then clean up; a second
 * signal cuts at once. The drain-time gauge runs from the signal to the last request's end.
 */
import { EngineMetrics } from "../../contract/metrics/engine_metrics.ts";
import { engineMetrics, shutDown } from "../../metrics/engine_lifecycle.ts";
import { startModel } from "../../runtime/start.ts";
import { RequestMetrics } from "../../metrics/request_metrics.ts";
import { KilnServer } from "../../server/app.ts";
import { WorkerSupervisor } from "../../server/supervisor.ts";
import { WorkerEngine } from "../../worker/client.ts";
import { specFiles } from "./file_source.ts";
import { ortWasmPaths } from "./ort_wasm.ts";
import type { HostOptions, ModelSpec } from "../../worker/protocol.ts";
import { modelName } from "../../formats/source.ts";
import { runCli } from "./flags.ts";
import { kernelPathsOption } from "./kernel_paths.ts";
import { listenFailure, SERVE, startupLines } from "./serve_flags.ts";
import { type HttpFront, serveFront } from "./http_front.ts";
import type { LoadPhase } from "../../runtime/gpu_model.ts";
import { speculativeConfig, type SpeculativeOptions } from "../../engines/speculation.ts";
import type { LLMEngine } from "../../contract/engine.ts";
import type { ZmqKvPublisher } from "./kv_events_zmq.ts";
import { isModelUrl, requireModelPath } from "./model_path.ts";

const { flags, env, fail } = runCli(SERVE);
if (flags.engine !== "ort" && (flags.variant !== undefined || flags.ep !== undefined)) {
  fail("--variant and --ep need --engine ort");
}
const dir = flags.model ?? new URL("../../../models/fortune/", import.meta.url).pathname;
requireModelPath("serve", dir);
// A checkpoint directory or GGUF file, or a base URL (an HF repo's `resolve/main/`) or a `.gguf`
// file's URL, read with Range requests.
const modelSpec = (where: string, name: string): ModelSpec =>
  isModelUrl(where)
    ? {
      kind: "url",
      base: where.endsWith("/") || where.endsWith(".gguf") ? where : `${where}/`,
      name,
      ...(flags["no-cache"] ? { cache: false } : {}),
    }
    : { kind: "dir", path: where, name };
const model = modelSpec(dir, flags.name ?? modelName(dir));
const apiKey = flags["api-key"] ?? env.KILN_API_KEY;
const { variant, ep } = flags;
let speculative: SpeculativeOptions<ModelSpec> | undefined;
try {
  const json = flags["speculative-config"];
  if (json !== undefined) {
    if (flags.engine === "ort") fail("--speculative-config needs the webgpu engine");
    const o = speculativeConfig(json);
    // A draft model is named as --model is: a directory, a GGUF file or a URL.
    if (o.method === "draft_model") {
      requireModelPath("serve", o.model, "--speculative-config model");
    }
    speculative = o.method === "draft_model"
      ? { ...o, model: modelSpec(o.model, modelName(o.model)) }
      : o;
  }
} catch (e) {
  fail(`--speculative-config: ${(e as Error).message}`);
}
// Bound before anything loads: an endpoint that cannot bind stops serve at once (exit 2).
let kvEvents: ZmqKvPublisher | undefined;
if (flags["kv-events"] !== undefined) {
  try {
    // zeromq is a native module (--allow-ffi): loaded only when asked for.
    const { ZmqKvPublisher } = await import("./kv_events_zmq.ts");
    kvEvents = await ZmqKvPublisher.bind({
      endpoint: flags["kv-events"],
      topic: flags["kv-events-topic"],
      encoding: flags["kv-events-encoding"],
      ...(flags["kv-events-replay"] ? { replayEndpoint: flags["kv-events-replay"] } : {}),
    });
    const { pub, replay } = kvEvents.endpoints;
    console.error(`serve: KV events bound at ${pub}${replay ? `, replay at ${replay}` : ""}`);
  } catch (e) {
    fail((e as Error).message);
  }
} else if (flags["kv-events-replay"] !== undefined) fail("--kv-events-replay needs --kv-events");
/** Route an engine's KV events to the ZMQ socket; a new engine starts from an empty cache. */
const publishKvEvents = async (e: LLMEngine) => {
  if (!kvEvents) return;
  kvEvents.publish({ type: "AllBlocksCleared" });
  for (const source of await e.kvEventSources?.() ?? []) {
    if (source.kind === "push") source.onReady(kvEvents);
  }
};
const engineOptions: Pick<HostOptions, "engine" | "ort"> = flags.engine === "ort"
  ? {
    engine: "ort",
    ort: {
      wasmPaths: ortWasmPaths(),
      ...(variant ? { variant } : {}),
      ...(ep ? { executionProvider: ep } : {}),
    },
  }
  : {};

/** The load so far, as the worker reports it: weight bytes, then pipelines compiled. */
let progress: { loaded: number; total: number; phase: LoadPhase } = {
  loaded: 0,
  total: 0,
  phase: "weights",
};
const newEngine = () =>
  new WorkerEngine(
    () => new Worker(new URL("./worker.ts", import.meta.url), { type: "module" }),
    {
      model,
      ...engineOptions,
      ...kernelPathsOption(env),
      // Absent: the engine sizes the cache from the context and the device's buffer limits.
      ...(flags["kv-blocks"] === undefined ? {} : { kvBlocks: flags["kv-blocks"] }),
      maxNumSeqs: flags["max-num-seqs"],
      ...(speculative ? { speculative } : {}),
    },
    (loaded, total, _item, phase) => {
      // The weights' bar stays, complete, on its line; the pipelines' bar follows below.
      if (phase !== progress.phase && drawing) draw("\n");
      progress = { loaded, total, phase };
    },
  );
const engine = newEngine();
let supervisor: WorkerSupervisor | undefined;
const hierarchy = { namespace: "kiln", component: "serve", endpoint: "generate", workerId: 1n };
let metrics = EngineMetrics.fromHierarchy(hierarchy);
const requests = new RequestMetrics();
let server: KilnServer;
try {
  // The server checks the Host and Origin lists itself (a wildcard CORS origin, a URL with a path).
  server = new KilnServer({
    engine,
    metrics,
    requests,
    ...(apiKey ? { apiKey } : {}),
    maxQueued: flags["max-queued"],
    bodyTimeoutMs: flags["body-timeout"] * 1000,
    bindHost: flags.host,
    ...(flags["allowed-hosts"] ? { allowedHosts: flags["allowed-hosts"] } : {}),
    ...(flags["cors-origins"] ? { corsOrigins: flags["cors-origins"] } : {}),
  });
} catch (e) {
  console.error(`serve: ${(e as Error).message}`);
  Deno.exit(2);
}
const drainSeconds = flags["drain-timeout"];

// Deno.serve has no header-read nor keep-alive idle deadline: the front gives it both.
let http: HttpFront;
try {
  http = serveFront({
    hostname: flags.host,
    port: flags.port,
    headerTimeoutMs: flags["header-timeout"] * 1000,
    idleTimeoutMs: flags["keepalive-timeout"] * 1000,
  }, (req) => server.fetch(req));
} catch (e) {
  console.error(`serve: ${listenFailure(e, flags.host, flags.port)}`);
  Deno.exit(2);
}
for (const line of startupLines(flags, env)) console.error(line);
console.log(`listening on http://${http.addr.hostname}:${http.addr.port}`);

// A progress bar while the weights reach the GPU (the worker reports bytes per tensor), then
// while the engine compiles its GPU pipelines (one count per pipeline).
const t0 = performance.now();
/** A bar's line is on screen and not ended: another line must start on a new one. */
let barOpen = false;
const draw = (end = "") => {
  const { loaded, total, phase } = progress;
  const s = ((performance.now() - t0) / 1000).toFixed(1);
  const frac = total > 0 ? loaded / total : 0;
  const bar = "#".repeat(Math.round(frac * 30)).padEnd(30, ".");
  const mb = (n: number) => (n / 1e6).toFixed(1);
  const what = phase === "pipelines"
    ? `compiling ${loaded}/${total} pipelines`
    : `${mb(loaded)}/${mb(total)} MB`;
  const verb = phase === "download" ? "downloading" : "loading";
  barOpen = !end.endsWith("\n");
  const line = `\r${verb} ${model.name} [${bar}] ${
    (frac * 100).toFixed(0).padStart(3)
  }% ${what} ${s} s`;
  // Padded: the pipelines' line is shorter than the weights' it overwrites.
  Deno.stderr.writeSync(new TextEncoder().encode(line.padEnd(72) + end));
};
const bar = setInterval(draw, 200);
/** The first load's bar is on screen (a replacement worker's load draws none). */
let drawing = true;
try {
  const started = await startModel(engine, specFiles(model), hierarchy);
  draw();
  const loaded = (performance.now() - t0) / 1000;
  const { config, text } = started;
  metrics = started.metrics; // now with the model's labels
  server.ready(config, text, metrics);
  await publishKvEvents(engine);
  clearInterval(bar);
  drawing = false;
  console.error(`\rloaded ${model.name} in ${loaded.toFixed(2)} s: ready`);
  supervisor = new WorkerSupervisor({
    server,
    text,
    make: newEngine,
    metricsFor: async (next, config, seconds) => {
      await publishKvEvents(next);
      return metrics = await engineMetrics(next, hierarchy, config, seconds);
    },
    log: (l) => console.error(l),
  }, engine);
} catch (e) {
  clearInterval(bar);
  drawing = false;
  console.error(`${barOpen ? "\n" : ""}serve: failed to load ${dir}: ${(e as Error).message}`);
  await engine.cleanup(); // startModel has, unless what failed came after it
  await http.shutdown();
  Deno.exit(2);
}

let stopping = false;
const stop = async () => {
  if (stopping) {
    console.error("second signal: cutting the requests in flight");
    server.abortAll();
    return;
  }
  stopping = true;
  supervisor?.stop();
  const inFlight = server.inFlight;
  console.error(`draining ${inFlight} request(s), at most ${drainSeconds} s`);
  // The drain time runs from here to the last request's end, the server's drain included.
  await shutDown(supervisor?.engine ?? engine, metrics, async () => {
    const { cut } = await server.drain(drainSeconds * 1000);
    if (cut > 0) {
      console.error(`cut ${cut} request(s) at the drain deadline (finish_reason "abort")`);
    }
  });
  await kvEvents?.close();
  console.error(
    metrics.render().body.split("\n").filter((l) => /_time_seconds\{/.test(l)).join("\n"),
  );
  // Responses already answered finish sending; a client that stopped reading gets 5 s.
  await Promise.race([http.shutdown(), new Promise((r) => setTimeout(r, 5000))]);
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
