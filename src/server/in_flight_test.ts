/**
 * `InFlight`, the count behind `maxQueued` and the drain: a run counts from `begin` until its end
 * (ending twice counts once), and `settled` resolves once the last run has ended, with no timer
 * left behind.
 */
import { strictEqual as equal } from "node:assert/strict";
import { InFlight } from "./in_flight.ts";

Deno.test("InFlight counts each run from begin to end, once, and settles when the last ends", async () => {
  const runs = new InFlight();
  equal(await runs.settled(60_000), true);
  const a = runs.begin(), b = runs.begin();
  equal(runs.size, 2);
  a();
  a();
  equal(runs.size, 1);
  const c = runs.begin();
  equal(runs.size, 2);
  const settled = runs.settled(60_000);
  b();
  c();
  equal(await settled, true);
  equal(runs.size, 0);
});
