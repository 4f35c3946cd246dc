/**
 * What the Deno tests of `openModel({ share })` check alike, for the SharedWorker and the
 * service-worker host: two models opened the same way share one engine (one load, two tabs) and
 * give the same greedy text; closing them detaches both.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import type { KilnModel } from "../../src/worker/open.ts";
import type { SharedEngineHost, SharedHostStats } from "../../src/worker/shared_host.ts";

/** Open two models with `open`, check they share one engine as `sharing`, then close both. */
export async function checkTwoModelsShare(
  open: () => Promise<KilnModel>,
  sharing: string,
  shared: SharedEngineHost,
): Promise<void> {
  const a = await open();
  const b = await open();
  try {
    equal(a.sharing, sharing);
    equal(b.sharing, sharing);
    const s = (await b.engine.stats()) as SharedHostStats;
    equal(s.loads, 1, "loaded once");
    equal(s.tabs, 2);
    const texts: string[] = [];
    for (const m of [a, b]) {
      let text = "";
      for await (const p of m.generate("You will", { max_tokens: 10, temperature: 0 })) {
        text += p.text;
      }
      texts.push(text);
    }
    ok(texts[0]!.length > 0);
    equal(texts[1], texts[0], "the same engine, the same greedy text");
  } finally {
    await a.close();
    await b.close();
  }
  equal(shared.tabs, 0, "closing a model detaches its tab");
}
