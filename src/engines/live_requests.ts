/**
 * The requests an engine is streaming, by request id: what `abort`, `drain` and `cleanup` of
 * every engine built on `Sequence` do to them.
 */
import type { EngineError } from "../contract/errors.ts";
import type { Sequence } from "./webgpu/sequence.ts";

/** Live requests by id. */
export class LiveRequests {
  readonly #seqs = new Map<string, Sequence>();

  /** Track `seq` under `id` until `delete(id)`. */
  add(id: string, seq: Sequence): void {
    this.#seqs.set(id, seq);
  }

  /** Stop tracking `id` (its stream has ended). */
  delete(id: string): void {
    this.#seqs.delete(id);
  }

  /** Abort the request `id` if it is live (its stream ends as cancelled). */
  abort(id: string): void {
    this.#seqs.get(id)?.abort();
  }

  /** End every live request's stream with `error`. */
  failAll(error: EngineError): void {
    for (const seq of this.#seqs.values()) seq.fail(error);
  }

  /** Cancel every live request. */
  cancelAll(): void {
    for (const seq of this.#seqs.values()) seq.cancel();
  }

  /** Resolves when every request live now has ended, or after `timeoutMs`, whichever is first. */
  async settle(timeoutMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const done = Promise.all([...this.#seqs.values()].map((s) => s.done));
    await Promise.race([done, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }
}
