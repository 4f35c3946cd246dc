/**
 * The requests a server has in flight: counted from admission to the end of their run, for the
 * `maxQueued` limit (429) and for the drain, which waits for them (or cuts them) before exit.
 */
import type { RunLedger } from "../openai/serving.ts";

/** The runs in flight; the serving layer's `RunLedger` for a server. */
export class InFlight implements RunLedger {
  readonly #runs = new Set<Promise<void>>();

  /** Runs in flight now. */
  get size(): number {
    return this.#runs.size;
  }

  /** A run starts now; the function returned ends it (a second call changes nothing). */
  begin(): () => void {
    let settle!: () => void;
    const run = new Promise<void>((r) => (settle = r));
    this.#runs.add(run);
    return () => {
      this.#runs.delete(run);
      settle();
    };
  }

  /** Resolves once none is in flight, or `ms` milliseconds have passed: whether none is left. */
  async settled(ms: number): Promise<boolean> {
    if (this.#runs.size === 0) return true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((r) => (timer = setTimeout(r, ms)));
    await Promise.race([Promise.allSettled([...this.#runs]), late]);
    clearTimeout(timer);
    return this.#runs.size === 0;
  }
}
