// A minimal app embedding Kiln from its npm package: the model runs in Kiln's Web Worker, text
// streams onto the page, Stop aborts, Chat uses the OpenAI-shaped helper, and the engine's
// Prometheus text is shown after each request. `document.body.dataset.state` says what it does.
import { openModel } from "@kiln/kiln";

const $ = (id) => document.getElementById(id);
let model;
let running;

function setState(state, status) {
  document.body.dataset.state = state;
  $("status").textContent = status;
  $("generate").disabled = $("chat").disabled = state !== "ready";
  $("stop").disabled = state !== "generating";
}

/** Stream `pieces` (objects with `text` and, last, `finish`) into the output. */
async function show(pieces) {
  setState("generating", "generating…");
  let finish = "error";
  try {
    for await (const piece of pieces) {
      $("output").textContent += piece.text;
      finish = piece.finish ?? finish;
    }
  } finally {
    $("finish").textContent = `finish: ${finish}`;
    $("finish").dataset.finish = finish;
    $("metrics").textContent = model.metricsText();
    setState("ready", "ready");
  }
}

$("form").addEventListener("submit", (e) => {
  e.preventDefault();
  running = new AbortController();
  $("output").textContent = $("prompt").value;
  const max_tokens = Number($("max-tokens").value);
  const seed = $("seed").value === "" ? undefined : Number($("seed").value);
  void show(model.generate($("prompt").value, { max_tokens, seed, signal: running.signal }));
});

$("stop").addEventListener("click", () => running?.abort());

$("chat").addEventListener("click", async () => {
  running = new AbortController();
  $("output").textContent = "";
  const stream = await model.chat.completions.create({
    messages: [{ role: "user", content: $("prompt").value }],
    max_tokens: Number($("max-tokens").value),
    ...($("seed").value === "" ? {} : { seed: Number($("seed").value) }),
    stream: true,
  }, { signal: running.signal });
  void show((async function* () {
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      yield { text: c?.delta.content ?? "", finish: c?.finish_reason ?? undefined };
    }
  })());
});

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
