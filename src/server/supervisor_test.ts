import { ok, strictEqual as equal } from "node:assert/strict";
import { EngineMetrics } from "../contract/metrics/engine_metrics.ts";
import { RequestMetrics } from "../metrics/request_metrics.ts";
import { specFiles } from "../adapters/deno/file_source.ts";
import { loadText } from "../text/load.ts";
import { WorkerEngine } from "../worker/client.ts";
import { KilnServer } from "./app.ts";
import { WorkerSupervisor } from "./supervisor.ts";
import { MODELS } from "../../test/support/models.ts";
import { firstChunks } from "../../test/support/streams.ts";

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
  const started = firstChunks(first, 1);
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
  const health = async () =>
    (await server.fetch(new Request("http://localhost/health", { headers: { host: "localhost" } })))
      .status;
  // What /health says when the supervisor has just heard of the death, and when it has a new
  // worker: events from its log, not a poll.
  let whileDown: Promise<number> | undefined;
  let restarted!: () => void;
  const ready = new Promise<void>((resolve) => (restarted = resolve));
  const log = (line: string) => {
    if (line.startsWith("engine worker died")) whileDown = health();
    if (line.startsWith("new engine worker ready")) restarted();
  };
  const supervisor = new WorkerSupervisor({ server, text, make, retryMs: 100, log }, first);
  const post = () =>
    server.fetch(
      new Request("http://localhost/v1/completions", {
        method: "POST",
        headers: { "content-type": "application/json", host: "localhost" },
        body: JSON.stringify({
          model: "fortune",
          prompt: "You",
          max_tokens: 300,
          ignore_eos: true,
          stream: false,
        }),
      }),
    );
  try {
    // Killed mid-request: at the request's first chunk, 299 tokens still to come.
    const inFlight = post();
    await started;
    worker!.terminate();
    const cut = await inFlight;
    ok(cut.status >= 500, `the cut request answered ${cut.status}`);
    await cut.body?.cancel();
    await ready;
    ok(whileDown !== undefined, "the supervisor logged the death");
    equal(await whileDown, 503, "/health said 503 while the worker was replaced");
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
