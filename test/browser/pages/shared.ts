/**
 * A tab of test/browser/shared_worker.test.mjs: `openModel({ share: true })` on the fortune
 * model (or, in test/browser/service_worker.test.mjs, `share: "service-worker"` with the
 * registration service.ts made, `globalThis.kilnRegistration`), and runs the test drives from
 * outside (`globalThis.tab`): start one, read how far it got, abort it, wait for its end (with the
 * `EngineError` type it ended with, if any), read the shared engine's stats.
 */
import { type KilnModel, openModel } from "../../../src/worker/open.ts";
import type { SharedHostStats } from "../../../src/worker/shared_host.ts";
import { EngineError } from "../../../src/contract/errors.ts";

interface Run {
  text: string;
  tokens: number;
  finish: string | undefined;
  error: string | undefined;
  /** The `EngineError` type the stream ended with, if it ended with one. */
  type: string | undefined;
  controller: AbortController;
  done: Promise<void>;
}

let model: KilnModel | undefined;
const runs = new Map<string, Run>();

const summary = (r: Run) => ({
  text: r.text,
  tokens: r.tokens,
  finish: r.finish,
  error: r.error,
  type: r.type,
});

Object.assign(globalThis, {
  tab: {
    async open(share: boolean | "service-worker" = true) {
      const serviceWorker = (globalThis as { kilnRegistration?: ServiceWorkerRegistration })
        .kilnRegistration;
      // Not through the model store: the test counts weight requests to see each load.
      model = await openModel({
        model: "/models/fortune/",
        share,
        ...(serviceWorker ? { serviceWorker } : {}),
        cache: false,
        engine: { kvBlocks: 64 },
      });
      return { sharing: model.sharing, config: model.config };
    },
    start(id: string, prompt: number[], maxTokens: number) {
      const controller = new AbortController();
      const run: Run = {
        text: "",
        tokens: 0,
        finish: undefined,
        error: undefined,
        type: undefined,
        controller,
        done: Promise.resolve(),
      };
      run.done = (async () => {
        try {
          const pieces = model!.generate(prompt, {
            max_tokens: maxTokens,
            temperature: 0,
            ignore_eos: true,
            signal: controller.signal,
          });
          for await (const p of pieces) {
            run.text += p.text;
            run.tokens += p.tokens;
            if (p.finish) run.finish = p.finish;
          }
        } catch (e) {
          run.error = String(e);
          run.type = e instanceof EngineError ? e.type : undefined;
        }
      })();
      runs.set(id, run);
    },
    tokens: (id: string) => runs.get(id)!.tokens,
    abort: (id: string) => runs.get(id)!.controller.abort(),
    async wait(id: string) {
      const run = runs.get(id)!;
      await run.done;
      return summary(run);
    },
    async stats(): Promise<SharedHostStats | undefined> {
      return (await model!.engine.stats()) as SharedHostStats | undefined;
    },
    async close() {
      await model!.close();
      model = undefined;
    },
  },
});
document.body.dataset.state = "ready";
