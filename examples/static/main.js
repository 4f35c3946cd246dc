// Kiln on a page with no build step: `kiln/` is a copy of the npm package's `dist/pkg/browser/`
// (kiln.js and kiln_worker.js, dependencies and shaders inlined), served as static files.
// The model runs in Kiln's Web Worker, text streams onto the page and Stop aborts.
// `document.body.dataset.state` says what the page does.
import { openModel } from "./kiln/kiln.js";

const $ = (id) => document.getElementById(id);
let model;
let running;

function setState(state, status) {
  document.body.dataset.state = state;
  $("status").textContent = status;
  $("generate").disabled = state !== "ready";
  $("stop").disabled = state !== "generating";
}

$("form").addEventListener("submit", async (e) => {
  e.preventDefault();
  running = new AbortController();
  const prompt = $("prompt").value;
  $("output").textContent = prompt;
  $("finish").removeAttribute("data-finish");
  setState("generating", "generating…");
  let finish = "error";
  try {
    const options = {
      max_tokens: Number($("max-tokens").value),
      ...($("seed").value === "" ? {} : { seed: Number($("seed").value) }),
      signal: running.signal,
    };
    for await (const piece of model.generate(prompt, options)) {
      $("output").textContent += piece.text;
      finish = piece.finish ?? finish; // the last piece has it: stop, length or cancelled
    }
  } finally {
    $("finish").textContent = `finish: ${finish}`;
    $("finish").dataset.finish = finish;
    setState("ready", `ready: ${model.config.model}`);
  }
});

$("stop").addEventListener("click", () => running?.abort());

if (!navigator.gpu) {
  setState("no-webgpu", "this browser has no WebGPU");
} else {
  try {
    model = await openModel({
      model: new URL("models/fortune/", document.baseURI),
      onProgress: (loaded, total) => {
        $("progress").max = total;
        $("progress").value = loaded;
      },
    });
    setState("ready", `ready: ${model.config.model}`);
  } catch (e) {
    setState("error", `${e.name}: ${e.message}`);
  }
}
