/**
 * One engine's life, held by every `LLMEngine` Kiln ships (`WebGpuEngine`, `OrtEngine`,
 * `MockEngine`, the worker's `WorkerEngine`): its state (`new` → `starting` → `running` →
 * `draining` → `stopped`, or `dead` when a worker engine's worker dies), the guard that refuses a
 * call in the wrong state with `EngineShutdown` (or the death's own error), the drain that stops
 * admitting requests and waits for the live ones at most a settle timeout, and the cleanup that
 * releases what the engine holds once, however many times it is called.
 *
 * @module
 */
import { EngineError } from "../contract/errors.ts";

/** Where an engine is in its life. */
export type LifecycleState = "new" | "starting" | "running" | "draining" | "stopped" | "dead";

/** An engine's state, and the transitions every engine makes the same way. */
export class Lifecycle {
  #state: LifecycleState = "new";
  #dead: EngineError | undefined;

  /** The state now. */
  get state(): LifecycleState {
    return this.#state;
  }

  /** Running or draining: requests admitted earlier still step. */
  get active(): boolean {
    return this.#state === "running" || this.#state === "draining";
  }

  /** The error the engine died with (`die`), if it did. */
  get deathError(): EngineError | undefined {
    return this.#dead;
  }

  /**
   * `start()` begins: `EngineShutdown` (`start() called on a <state> engine`) unless the engine
   * is new. `running` at once skips `starting` (an engine that admits requests while it loads).
   */
  begin(runningAtOnce = false): void {
    if (this.#state !== "new") {
      throw EngineError.shutdown(`start() called on a ${this.#state} engine`);
    }
    this.#state = runningAtOnce ? "running" : "starting";
  }

  /** `start()` succeeded. */
  started(): void {
    this.#state = "running";
  }

  /**
   * Throw unless running: the death's error for a dead engine, else `EngineShutdown`
   * (`<what> on a <state> engine`).
   */
  require(what: string): void {
    if (this.#state !== "running") {
      throw this.#dead ?? EngineError.shutdown(`${what} on a ${this.#state} engine`);
    }
  }

  /**
   * Stop admitting requests (a running engine becomes `draining`) and wait for `live` to
   * resolve, at most `timeoutMs` when given.
   */
  async drain(live: () => Promise<unknown>, timeoutMs?: number): Promise<void> {
    if (this.#state === "running") this.#state = "draining";
    if (timeoutMs === undefined) {
      await live();
      return;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)));
    await Promise.race([live(), timeout]);
    clearTimeout(timer);
  }

  /**
   * The engine died with `error` (a worker gone): `dead`, the guard throws `error` from now on.
   * False (and nothing changes) when it is stopped or dead already.
   */
  die(error: EngineError): boolean {
    if (this.#state === "stopped" || this.#state === "dead") return false;
    this.#dead = error;
    this.#state = "dead";
    return true;
  }

  /**
   * Stop: `stopped` from any state, then `release(was)` with the state it left, once in the
   * engine's life and only if it had begun starting (a new engine holds nothing; a second
   * cleanup finds it stopped and returns at once).
   */
  async cleanup(release: (was: LifecycleState) => Promise<void> | void): Promise<void> {
    const was = this.#state;
    this.#state = "stopped";
    if (was === "stopped" || was === "new") return;
    await release(was);
  }

  /** A failed `start()`: `stopped`, after `release` freed what it had acquired. */
  async failStart(release: () => Promise<void>): Promise<void> {
    await release();
    this.#state = "stopped";
  }
}
