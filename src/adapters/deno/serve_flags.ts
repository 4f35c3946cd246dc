/**
 * `deno task serve`'s command line: its declared flags and environment, and the lines it prints
 * before loading anything (authentication on or off, never the key; the bind address; the limits
 * in force).
 */
import type { CliSpec, FlagTable, FlagValues } from "./flags.ts";
import { KERNEL_PATHS_ENV } from "./kernel_paths.ts";

/** A day: `setTimeout` cannot wait much longer (2^31 ms), so longer timeouts are refused. */
const DAY_S = 86_400;

/** The flags of `deno task serve`. */
export const SERVE_FLAGS = {
  model: {
    type: "string",
    arg: "DIR|FILE.gguf|URL",
    help: "a checkpoint folder or GGUF file, an HF repo's resolve/main/ URL or a .gguf URL " +
      "(default: the embedded fortune model)",
  },
  name: { type: "string", help: "the model's name in the API (default: from --model)" },
  "no-cache": {
    type: "boolean",
    help: "read a --model URL over the network each time, not through the model cache " +
      "($KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln/models)",
  },
  host: { type: "string", default: "127.0.0.1", help: "the address to bind" },
  port: { type: "integer", min: 0, max: 65535, default: 8080, help: "the port, 0 for a free one" },
  "api-key": {
    type: "string",
    arg: "KEY",
    help: "require this bearer token on every route but /health (or set KILN_API_KEY)",
  },
  "allowed-hosts": {
    type: "list",
    arg: "HOST,...",
    help: "the Host names answered, * for any (default: loopback names on a loopback --host)",
  },
  "cors-origins": {
    type: "list",
    arg: "ORIGIN,...",
    help: "exact origins allowed cross-origin requests (default: none)",
  },
  "max-queued": {
    type: "integer",
    min: 1,
    default: 64,
    help: "requests in progress beyond this get 429",
  },
  "header-timeout": {
    type: "number",
    min: 0.1,
    max: DAY_S,
    default: 10,
    arg: "SECONDS",
    help: "a request head (request line and headers) not received whole within this of its " +
      "first byte, or of the connect for a connection's first request, gets 408 and a close",
  },
  "keepalive-timeout": {
    type: "number",
    min: 0.1,
    max: DAY_S,
    default: 75,
    arg: "SECONDS",
    help: "a keep-alive connection with no request since its last response ended is closed " +
      "after this (a response in flight, a stream included, is never cut)",
  },
  "body-timeout": {
    type: "number",
    min: 0.1,
    max: DAY_S,
    default: 10,
    arg: "SECONDS",
    help: "a request body not received whole in time gets 408",
  },
  "drain-timeout": {
    type: "number",
    min: 0,
    max: DAY_S,
    default: 30,
    arg: "SECONDS",
    help: "on SIGINT/SIGTERM, requests in flight are cut after this",
  },
  "kv-blocks": {
    type: "integer",
    min: 1,
    help:
      "KV cache blocks of 16 tokens (default: four contexts, within the adapter's buffer limit)",
  },
  "max-num-seqs": { type: "integer", min: 1, default: 16, help: "sequences decoded together" },
  engine: {
    type: "enum",
    choices: ["webgpu", "ort"],
    default: "webgpu",
    help: "Kiln's WebGPU engine, or onnxruntime-web on an ONNX export folder",
  },
  "speculative-config": {
    type: "string",
    arg: "JSON",
    help: 'speculative decoding, as vLLM\'s flag: {"method":"ngram","num_speculative_tokens":4,' +
      '"prompt_lookup_max":4,"prompt_lookup_min":2}, or a draft model of the same tokenizer: ' +
      '{"model":"DIR|FILE.gguf|URL","num_speculative_tokens":4} (default off)',
  },
  "kv-events": {
    type: "string",
    arg: "ENDPOINT",
    help: "publish KV cache events on a ZMQ PUB socket bound here, as vLLM frames them " +
      "(e.g. tcp://127.0.0.1:5557), for Dynamo's KV router",
  },
  "kv-events-replay": {
    type: "string",
    arg: "ENDPOINT",
    help: "--kv-events: a ZMQ ROUTER socket bound here answers replay requests for missed batches",
  },
  "kv-events-topic": { type: "string", default: "", help: "--kv-events: the topic frame" },
  "kv-events-encoding": {
    type: "enum",
    choices: ["positional", "map", "map-events"],
    default: "positional",
    help: "--kv-events: the payload as vLLM's positional arrays, as maps of field names " +
      "(batch and events), or map events in a positional batch (docs/dynamo.md)",
  },
  variant: { type: "string", help: "--engine ort: the graph in onnx/ (e.g. model_fp16)" },
  ep: { type: "enum", choices: ["webgpu", "wasm"], help: "--engine ort: the execution provider" },
} as const satisfies FlagTable;

/** The environment `deno task serve` reads. */
export const SERVE_ENV = {
  KILN_API_KEY: { type: "string", arg: "KEY", help: "the API key when --api-key is not given" },
  ...KERNEL_PATHS_ENV,
} as const satisfies FlagTable;

/** `deno task serve`'s command line. */
export const SERVE: CliSpec<typeof SERVE_FLAGS, typeof SERVE_ENV> = {
  name: "serve",
  command: "deno task serve",
  about: "The OpenAI-compatible server (/v1/completions, /v1/chat/completions, /v1/models), " +
    "with /metrics for Prometheus and /health, over a WorkerEngine.",
  flags: SERVE_FLAGS,
  env: SERVE_ENV,
};

/** Whether `host` is a loopback address or name (`127.0.0.0/8`, `::1`, `localhost`). */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** What serve prints before it loads: authentication (never the key), bind address, limits. */
export function startupLines(
  flags: FlagValues<typeof SERVE_FLAGS>,
  env: FlagValues<typeof SERVE_ENV>,
): string[] {
  const source = flags["api-key"] !== undefined
    ? "--api-key"
    : env.KILN_API_KEY !== undefined
    ? "KILN_API_KEY"
    : undefined;
  const hosts = flags["allowed-hosts"];
  const cors = flags["cors-origins"];
  return [
    source === undefined
      ? "serve: authentication OFF: every route answers without a key (set --api-key or KILN_API_KEY)"
      : `serve: authentication on: a bearer key from ${source} on every route but /health`,
    `serve: bind ${flags.host} port ${flags.port}${flags.port === 0 ? " (a free one)" : ""}`,
    `serve: limits: max queued ${flags["max-queued"]}, header timeout ${
      flags["header-timeout"]
    } s, keep-alive timeout ${flags["keepalive-timeout"]} s, body timeout ${
      flags["body-timeout"]
    } s, drain timeout ${flags["drain-timeout"]} s, kv blocks ${
      flags["kv-blocks"] ?? "from the model's context"
    }, max num seqs ${flags["max-num-seqs"]}`,
    `serve: allowed hosts: ${
      hosts !== undefined
        ? hosts.join(", ")
        : isLoopback(flags.host)
        ? "loopback names only (not set, --host is loopback)"
        : "not set"
    }; CORS origins: ${cors !== undefined ? cors.join(", ") : "none"}`,
    ...(flags["kv-events"] === undefined ? [] : [
      `serve: KV events on ${flags["kv-events"]}${
        flags["kv-events-replay"] ? `, replay on ${flags["kv-events-replay"]}` : ""
      }${
        flags["kv-events-encoding"] === "positional"
          ? ""
          : `, ${flags["kv-events-encoding"]} encoding`
      }`,
    ]),
  ];
}

/**
 * The one line serve ends with when it cannot listen on `host`:`port` (`e`, what `Deno.listen`
 * threw): a port in use, a port the user may not bind, an address not of this machine.
 */
export function listenFailure(e: unknown, host: string, port: number): string {
  if (e instanceof Deno.errors.AddrInUse) {
    return `port ${port} is in use (another server?); pick another with --port`;
  }
  if (e instanceof Deno.errors.PermissionDenied) {
    return `port ${port} needs privileges to bind (ports below 1024 do); pick another with --port`;
  }
  if (e instanceof Deno.errors.AddrNotAvailable) {
    return `--host ${host} is not an address of this machine`;
  }
  const why = e instanceof Error ? e.message.split("\n")[0] : String(e);
  return `cannot listen on ${host} port ${port}: ${why}`;
}
