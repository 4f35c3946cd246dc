/**
 * `Lifecycle`: the transitions, the guard's typed errors, the drain's settle timeout, the
 * cleanup that releases once; and planted errors (a guard that admits a stopped engine, a
 * cleanup that releases twice, a drain with no timeout) that the same checks reject.
 */
import { deepStrictEqual, ok, rejects, strictEqual, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { Lifecycle, type LifecycleState } from "./lifecycle.ts";

/** The engine's calls refused once stopped, each with `EngineShutdown` naming the state. */
function checkGuard(life: Lifecycle): void {
  throws(() => life.require("generate()"), (e: unknown) => {
    ok(e instanceof EngineError);
    strictEqual(e.type, "EngineShutdown");
    strictEqual(e.message, `generate() on a ${life.state} engine`);
    return true;
  });
}

/** Two cleanups release once, with the state the first one left. */
async function checkCleanupOnce(life: Lifecycle): Promise<void> {
  const released: string[] = [];
  await life.cleanup((was) => void released.push(was));
  await life.cleanup((was) => void released.push(was));
  deepStrictEqual(released, ["running"]);
  strictEqual(life.state, "stopped");
}

/** A drain whose requests never end returns once its settle timeout has passed. */
async function checkDrainBounded(life: Lifecycle): Promise<void> {
  let settled = false;
  await life.drain(() => new Promise(() => {}), 0).then(() => (settled = true));
  ok(settled, "the drain returned although its requests never ended");
}

function running(): Lifecycle {
  const life = new Lifecycle();
  life.begin();
  life.started();
  return life;
}

Deno.test("lifecycle: new → starting → running → draining → stopped; a second start is EngineShutdown", async () => {
  const life = new Lifecycle();
  strictEqual(life.state, "new");
  checkGuard(life);
  life.begin();
  strictEqual(life.state, "starting");
  ok(!life.active);
  life.started();
  strictEqual(life.state, "running");
  life.require("generate()");
  throws(() => life.begin(), { message: "start() called on a running engine" });
  await life.drain(() => Promise.resolve(), 1000);
  strictEqual(life.state, "draining");
  ok(life.active, "a draining engine still steps what it admitted");
  checkGuard(life);
  await life.cleanup(() => {});
  strictEqual(life.state, "stopped");
  ok(!life.active);
  checkGuard(life);
});

Deno.test("lifecycle: a failed start releases while starting, then is stopped; a new engine's cleanup releases nothing", async () => {
  const life = new Lifecycle();
  life.begin();
  const seen: string[] = [];
  await life.failStart(() => Promise.resolve(void seen.push(life.state)));
  deepStrictEqual(seen, ["starting"]);
  strictEqual(life.state, "stopped");
  const fresh = new Lifecycle();
  await fresh.cleanup(() => void seen.push("released"));
  deepStrictEqual(seen, ["starting"]);
  strictEqual(fresh.state, "stopped");
});

Deno.test("lifecycle: cleanup releases once; the drain is bounded by its settle timeout", async () => {
  await checkCleanupOnce(running());
  await checkDrainBounded(running());
  const life = running();
  let ended = false;
  await life.drain(() => Promise.resolve().then(() => (ended = true)));
  ok(ended, "without a timeout the drain waits for its requests");
});

Deno.test("lifecycle: a death's error is what the guard throws; a stopped engine cannot die", async () => {
  const life = running();
  const death = new EngineError("Disconnected", "worker gone");
  ok(life.die(death));
  strictEqual(life.state, "dead");
  strictEqual(life.deathError, death);
  throws(() => life.require("generate()"), (e: unknown) => e === death);
  ok(!life.die(new EngineError("Disconnected", "again")), "a second death changes nothing");
  strictEqual(life.deathError, death);
  const released: string[] = [];
  await life.cleanup((was) => void released.push(was));
  deepStrictEqual(released, ["dead"], "a dead engine still releases its worker");
  ok(!life.die(death), "a stopped engine cannot die");
  strictEqual(life.state, "stopped");
});

Deno.test("lifecycle planted errors: a guard that admits a stopped engine, a cleanup that releases twice, a drain with no timeout", async () => {
  class AdmitsStopped extends Lifecycle {
    override require(_what: string): void {}
  }
  const stopped = new AdmitsStopped();
  await stopped.cleanup(() => {});
  throws(() => checkGuard(stopped));

  class ReleasesTwice extends Lifecycle {
    override async cleanup(release: (was: LifecycleState) => void): Promise<void> {
      const was = this.state;
      await super.cleanup(() => {});
      release(was === "stopped" ? "running" : was);
    }
  }
  const twice = new ReleasesTwice();
  twice.begin();
  twice.started();
  await rejects(checkCleanupOnce(twice));

  class Unbounded extends Lifecycle {
    override drain(live: () => Promise<unknown>): Promise<void> {
      return super.drain(live);
    }
  }
  // The unbounded drain never returns: its check is raced against a real drain's timeout.
  const mutant = new Unbounded();
  mutant.begin();
  mutant.started();
  const outcome = await Promise.race([
    checkDrainBounded(mutant).then(() => "returned"),
    running().drain(() => new Promise(() => {}), 0).then(() => "timed out"),
  ]);
  strictEqual(outcome, "timed out");
});
