/**
 * The Kiln demo: the embedded fortune model (or one loaded from a URL, a chat model of the
 * catalog `models/catalog.json` (`catalog.ts`), or local files) opened
 * with `openModel` (the engine in a Web Worker behind `WorkerEngine`), streaming into the page, with a Stop button on an AbortSignal,
 * sampling controls, a chat mode for models with a chat template, JSON output held to a schema and
 * a tool-call example (`structured.ts`), and a live metrics panel drawn from the engine's
 * Prometheus text. `document.body.dataset.state` says what it is doing
 * (`loading`, `ready`, `generating`, `error`, `no-webgpu`).
 */
import type { FinishReasonText, SamplingFields } from "../src/openai/types.ts";
import { type DownloadProgress, modelName } from "../src/formats/source.ts";
import { encodeChat } from "../src/text/load.ts";
import { type KilnModel, openModel } from "../src/worker/open.ts";
import { MetricsPanel } from "./metrics_panel.ts";
import { checkFiles, dropOldCache, onnxFiles, onnxVariant, probeUrl } from "./model_source.ts";
import { CachePanel, storeApi } from "./cache_panel.ts";
import { offerCatalog } from "./catalog.ts";
import { downloadText, readyText } from "./status_text.ts";
import type { HostOptions } from "../src/worker/protocol.ts";
import {
  DEFAULT_SCHEMA,
  type RunEnd,
  runJson,
  runToolCall,
  type StructuredRun,
} from "./structured.ts";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const ui = {
  app: $("app"),
  modelName: $("model-name"),
  status: $("status"),
  progress: $<HTMLProgressElement>("progress"),
  error: $("error"),
  catalogForm: $<HTMLFormElement>("catalog-form"),
  catalog: $<HTMLFieldSetElement>("catalog-set"),
  urlForm: $<HTMLFormElement>("url-form"),
  url: $<HTMLInputElement>("model-url"),
  files: $<HTMLInputElement>("model-files"),
  drop: $("drop-zone"),
  cache: $("cache-panel"),
  reload: $<HTMLButtonElement>("reload"),
  form: $<HTMLFormElement>("generate-form"),
  prompt: $<HTMLTextAreaElement>("prompt"),
  temperature: $<HTMLInputElement>("temperature"),
  topP: $<HTMLInputElement>("top-p"),
  topK: $<HTMLInputElement>("top-k"),
  maxTokens: $<HTMLInputElement>("max-tokens"),
  seed: $<HTMLInputElement>("seed"),
  chat: $<HTMLInputElement>("chat"),
  mode: $<HTMLFieldSetElement>("mode"),
  schemaBox: $("schema-box"),
  schema: $<HTMLTextAreaElement>("schema"),
  generate: $<HTMLButtonElement>("generate"),
  stop: $<HTMLButtonElement>("stop"),
  toolChoice: $<HTMLSelectElement>("tool-choice"),
  toolExample: $<HTMLButtonElement>("tool-example"),
  output: $("output"),
  check: $("check"),
  finish: $("finish"),
};

/** The output mode the radio buttons pick: free text, or JSON held to the schema box. */
const jsonMode = () =>
  ui.mode.querySelector<HTMLInputElement>("input[name=mode]:checked")?.value === "json";

type State = "loading" | "ready" | "generating" | "error" | "no-webgpu";
function setState(state: State, status: string): void {
  document.body.dataset.state = state;
  ui.status.textContent = status;
  const busy = state === "loading" || state === "generating";
  ui.generate.disabled = ui.toolExample.disabled = busy || loaded === undefined;
  ui.stop.disabled = state !== "generating";
  for (const el of [ui.url, ui.files]) el.disabled = busy;
  ui.catalog.disabled = busy || ui.catalog.querySelector("option") === null;
}

function showError(message: string | undefined): void {
  ui.error.hidden = message === undefined;
  ui.error.textContent = message ?? "";
}

let loaded: KilnModel | undefined;
let running: AbortController | undefined;
const panel = new MetricsPanel($("metrics"));
const cachePanel = new CachePanel(ui.cache, storeApi, (m) => showError(m));
/** The status line once a model is loaded (shown again after each generation). */
let readyLine = "ready";

/** The adapter has `shader-f16` (an ONNX export's f16 graph can run); set by `main`. */
let f16 = false;

/**
 * Kiln's own engine, or for an ONNX export onnxruntime-web's (its `.wasm` is an asset of the
 * build: see `vite.config.ts`).
 */
function engineFor(files: readonly File[]): Pick<HostOptions, "engine" | "ort"> {
  const variant = onnxVariant(files);
  return variant === undefined ? {} : { engine: "ort", ort: { variant } };
}

/**
 * A model to load: by URL (through the library's model store, the engine shared by the origin's
 * tabs), or `File`s (picked, dropped, or an ONNX export read from the store).
 */
type Source = { kind: "url"; base: string } | { kind: "files"; files: File[] };

/** The load's progress: the download (bytes, rate, time left), weights, then pipelines. */
function onProgress(
  n: number,
  total: number,
  _item: string,
  phase: string,
  download?: DownloadProgress,
): void {
  if (phase === "download" && download) {
    progress(download.overall.loaded, download.overall.total, "");
    ui.status.textContent = downloadText(download);
  } else if (phase === "pipelines") progress(n, total, "compiling GPU kernels", "pipelines");
  else progress(n, total, "weights to the GPU");
}

/** Replace the current model with `source`. */
async function load(source: Source, name: string): Promise<void> {
  ui.reload.hidden = true;
  setState("loading", `starting ${name}…`);
  const previous = loaded;
  loaded = undefined;
  await previous?.engine.cleanup();
  const t0 = performance.now();
  const model = await openModel({
    ...(source.kind === "url"
      ? { model: source.base, share: true }
      : { model: source.files, engine: engineFor(source.files) }),
    name,
    onProgress,
    metrics: { component: "demo" },
  }).finally(() => void cachePanel.refresh());
  const loadTime = (performance.now() - t0) / 1000;
  const { engine, config, text } = model;
  loaded = model;
  // A worker that dies (a crash, the GPU process gone) ends its streams with `Disconnected`;
  // offer to load the same files into a new one.
  engine.onDeath((e) => {
    if (loaded?.engine !== engine) return;
    loaded = undefined;
    showError(`the engine worker died: ${e.message}`);
    setState("error", "no model loaded");
    ui.reload.hidden = false;
    ui.reload.onclick = () => void guarded(`reloading ${name}`, () => load(source, name));
  });
  ui.modelName.textContent = `${name} (${config.context_length} tokens of context)`;
  ui.chat.disabled = text.chat.isDefault;
  ui.chat.checked = ui.chat.checked && !text.chat.isDefault;
  // A shared host counts the tabs on its engine (a dedicated worker's stats have no `tabs`).
  const stats = await engine.stats().catch(() => undefined) as { tabs?: number } | undefined;
  readyLine = readyText(config, loadTime, { sharing: model.sharing, tabs: stats?.tabs });
  document.body.dataset.sharing = model.sharing;
  setState("ready", readyLine);
}

async function guarded(what: string, fn: () => Promise<void>): Promise<void> {
  showError(undefined);
  try {
    await fn();
  } catch (e) {
    // An `EngineError` shows its Dynamo type (`InvalidArgument`), whose message names the field.
    const err = e as Error & { type?: string };
    const kind = err.name === "Error" ? "" : `${err.name}${err.type ? ` (${err.type})` : ""}: `;
    showError(`${what}: ${kind}${err.message}`);
    setState(loaded ? "ready" : "error", loaded ? readyLine : "no model loaded");
  } finally {
    ui.progress.hidden = true;
  }
}

/**
 * The progress bar and status line: bytes (downloads, weights) or a count (pipelines); `total` 0
 * means unknown.
 */
function progress(
  done: number,
  total: number,
  what: string,
  unit: "MB" | "pipelines" = "MB",
): void {
  ui.progress.hidden = false;
  const mb = (n: number) => (n / 1e6).toFixed(1);
  if (total === 0) {
    // A download whose size the server did not send (compressed, chunked): no bar, no total.
    ui.progress.removeAttribute("value");
    ui.status.textContent = `${what}: ${unit === "MB" ? `${mb(done)} MB` : done}`;
    return;
  }
  ui.progress.max = total;
  ui.progress.value = done;
  ui.status.textContent = unit === "MB"
    ? `${what}: ${mb(done)} / ${mb(total)} MB`
    : `${what}: ${done} / ${total}`;
}

function loadUrl(base: string): Promise<void> {
  return guarded(`loading ${base}`, async () => {
    setState("loading", `opening ${base}…`);
    const found = await probeUrl(base, f16);
    const name = modelName(base);
    if (found.kind === "url") return await load(found, name);
    // onnxruntime-web's engine takes `File`s: the export is downloaded into the store first.
    const files = await onnxFiles(found, (p) => {
      progress(p.overall.loaded, p.overall.total, "");
      ui.status.textContent = downloadText(p);
    });
    await load({ kind: "files", files }, name);
  });
}

function loadFiles(list: FileList | null): Promise<void> {
  const files = [...(list ?? [])];
  return guarded("loading the files", async () => {
    checkFiles(files);
    const weights = files.find((f) => /\.(safetensors|onnx|gguf)$/.test(f.name));
    await load({ kind: "files", files }, weights?.name.replace(/\..*$/, "") ?? "model");
  });
}

/** The prompt's token ids: chat messages through the template, or the text as it is. */
function promptIds(m: KilnModel, prompt: string): number[] {
  return ui.chat.checked
    ? encodeChat(m.text, [{ role: "user", content: prompt }])
    : m.text.tokenizer.encode(prompt);
}

const num = (input: HTMLInputElement) => (input.value === "" ? undefined : Number(input.value));

/** The sampling controls as OpenAI request fields (`max_tokens` defaults to 200). */
function sampling(): SamplingFields {
  const seed = num(ui.seed);
  return {
    max_tokens: num(ui.maxTokens) ?? 200,
    temperature: num(ui.temperature) ?? 0.8,
    top_p: num(ui.topP) ?? 1,
    ...(num(ui.topK) ? { top_k: num(ui.topK)! } : {}),
    ...(seed !== undefined ? { seed } : {}),
  };
}

/** The line under the output: tokens, time, rate and how it ended (`data-finish`). */
function showFinish(count: number, seconds: number, reason: string): void {
  ui.finish.textContent = `${count} tokens in ${seconds.toFixed(2)} s (${
    (count / seconds).toFixed(1)
  } tokens/s), finish: ${reason}`;
  ui.finish.dataset.finish = reason;
}

/**
 * A JSON-mode request or the tool-call example, through `structured.ts`; the finish line shows
 * OpenAI's `finish_reason` as it came (`error` when the request failed).
 */
async function structured(run: (r: StructuredRun) => Promise<RunEnd>): Promise<void> {
  const m = loaded;
  if (!m) return;
  running = new AbortController();
  ui.output.textContent = ui.finish.textContent = ui.check.textContent = "";
  delete ui.finish.dataset.finish;
  delete ui.check.dataset.check;
  setState("generating", "generating…");
  const t0 = performance.now();
  let end: RunEnd | undefined;
  try {
    end = await run({
      model: m,
      prompt: ui.prompt.value,
      chat: ui.chat.checked,
      sampling: sampling(),
      signal: running.signal,
      output: ui.output,
      check: ui.check,
    });
  } finally {
    running = undefined;
    showFinish(end?.tokens ?? 0, (performance.now() - t0) / 1000, end?.finish ?? "error");
    setState("ready", readyLine);
  }
}

async function generate(): Promise<void> {
  if (jsonMode()) return structured((r) => runJson(r, ui.schema.value));
  const m = loaded;
  if (!m) return;
  const prompt = ui.prompt.value;
  const ids = promptIds(m, prompt);
  const maxTokens = Math.max(
    1,
    Math.min(num(ui.maxTokens) ?? 200, (m.config.context_length ?? 2048) - ids.length),
  );
  const seed = num(ui.seed);
  running = new AbortController();
  ui.output.textContent = ui.chat.checked ? "" : prompt;
  ui.finish.textContent = ui.check.textContent = "";
  delete ui.check.dataset.check;
  setState("generating", "generating…");
  let finish: FinishReasonText | undefined;
  let count = 0;
  const t0 = performance.now();
  try {
    const pieces = m.generate(ids, {
      max_tokens: maxTokens,
      temperature: num(ui.temperature) ?? 0.8,
      top_p: num(ui.topP) ?? 1,
      ...(num(ui.topK) ? { top_k: num(ui.topK)! } : {}),
      ...(seed !== undefined ? { seed } : {}),
      signal: running.signal,
    });
    for await (const piece of pieces) {
      count += piece.tokens;
      ui.output.textContent += piece.text;
      if (piece.finish) finish = piece.finish;
    }
  } finally {
    running = undefined;
    const s = (performance.now() - t0) / 1000;
    // The demo asks for no stop strings or stop tokens: OpenAI's `stop` is the model's EOS.
    const reason = finish === undefined ? "error" : finish === "stop" ? "eos" : finish;
    showFinish(count, s, reason);
    setState("ready", readyLine);
  }
}

function scrape(): void {
  if (loaded) panel.update(loaded.metrics.render().body);
}

function wire(): void {
  ui.form.addEventListener("submit", (e) => {
    e.preventDefault();
    void guarded("generating", generate);
  });
  ui.stop.addEventListener("click", () => running?.abort());
  ui.schema.value = JSON.stringify(DEFAULT_SCHEMA, null, 2);
  ui.mode.addEventListener("change", () => {
    ui.schemaBox.hidden = !jsonMode();
  });
  ui.toolExample.addEventListener("click", () => {
    void guarded("the tool call", () => structured((r) => runToolCall(r, ui.toolChoice.value)));
  });
  offerCatalog(ui.catalogForm, new URL("models/catalog.json", document.baseURI).href, (url) => {
    ui.chat.checked = true; // a chat model is asked in chat mode (kept if it has a template)
    void loadUrl(url);
  });
  ui.urlForm.addEventListener("submit", (e) => {
    e.preventDefault();
    void loadUrl(ui.url.value.trim());
  });
  ui.files.addEventListener("change", () => void loadFiles(ui.files.files));
  ui.drop.addEventListener("dragover", (e) => {
    e.preventDefault();
    ui.drop.classList.add("over");
  });
  ui.drop.addEventListener("dragleave", () => ui.drop.classList.remove("over"));
  ui.drop.addEventListener("drop", (e) => {
    e.preventDefault();
    ui.drop.classList.remove("over");
    void loadFiles(e.dataTransfer?.files ?? null);
  });
  void dropOldCache();
  setInterval(scrape, 500);
  void cachePanel.refresh();
}

async function main(): Promise<void> {
  const adapter = !("gpu" in navigator) || navigator.gpu === undefined
    ? undefined
    : await navigator.gpu.requestAdapter().catch(() => null);
  const reason = adapter === undefined
    ? "navigator.gpu is missing."
    : adapter === null
    ? "navigator.gpu exists but offers no adapter (WebGPU is disabled or the GPU is blocklisted)."
    : undefined;
  f16 = adapter?.features.has("shader-f16") ?? false;
  if (reason !== undefined) {
    $("no-webgpu").hidden = false;
    $("no-webgpu-reason").textContent = reason;
    document.body.dataset.state = "no-webgpu";
    return;
  }
  ui.app.hidden = false;
  wire();
  await loadUrl(new URL("models/fortune/", document.baseURI).href);
}

void main();
