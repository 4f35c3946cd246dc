import { equal, ok } from "node:assert/strict";
import { EngineMetrics } from "../metrics/engine_metrics.ts";
import { RequestMetrics } from "../metrics/request_metrics.ts";
import { specFiles } from "../adapters/deno/file_source.ts";
import { loadText } from "../text/load.ts";
import { WorkerEngine } from "../worker/client.ts";
import { KilnServer } from "./app.ts";
import { WorkerSupervisor } from "./supervisor.ts";
import { MODELS } from "../../test/support/models.ts";

const fortune = MODELS.find((m) => m.name === "fortune")!.dir.pathname;
const spec = { kind: "dir" as const, path: fortune, name: "fortune" };

Deno.test("a worker killed under the server: /health 503, then a new worker serves again", async () => {
  let worker: Worker | undefined;
  const make = () =>
    new WorkerEngine(
      () =>
        worker = new Worker(new URL("../adapters/deno/worker.ts", import.meta.url), {
          type: "module",
        }),
      { model: spec, kvBlocks: 64 },
      undefined,
      { intervalMs: 100, timeoutMs: 3000 },
    );
  const first = make();
  const server = new KilnServer({
    engine: first,
    metrics: EngineMetrics.fromHierarchy({
      namespace: "kiln",
      component: "test",
      endpoint: "generate",
      workerId: 1n,
    }),
    requests: new RequestMetrics(),
  });
  const [config, text] = await Promise.all([first.start(1n), loadText(specFiles(spec))]);
  server.ready(config, text);
  const supervisor = new WorkerSupervisor({ server, text, make, retryMs: 100 }, first);
  const post = () =>
    server.fetch(
      new Request("http://localhost/v1/completions", {
        method: "POST",
        headers: { "content-type": "application/json", host: "localhost" },
        body: JSON.stringify({ model: "fortune", prompt: "You", max_tokens: 300, stream: false }),
      }),
    );
  const health = async () =>
    (await server.fetch(new Request("http://localhost/health", { headers: { host: "localhost" } })))
      .status;
  try {
    const inFlight = post();
    await new Promise((r) => setTimeout(r, 200));
    worker!.terminate();
    const cut = await inFlight;
    ok(cut.status >= 500, `the cut request answered ${cut.status}`);
    await cut.body?.cancel();
    let sawDown = false;
    for (let i = 0; i < 600 && supervisor.restarts === 0; i++) {
      if (await health() === 503) sawDown = true;
      await new Promise((r) => setTimeout(r, 50));
    }
    ok(sawDown, "/health said 503 while the worker was replaced");
    equal(supervisor.restarts, 1);
    equal(await health(), 200);
    const again = await post();
    equal(again.status, 200, await again.clone().text());
    const body = await again.json() as { choices: { text: string }[] };
    ok(body.choices[0]!.text.length > 0);
  } finally {
    supervisor.stop();
    await supervisor.engine.cleanup();
  }
});
