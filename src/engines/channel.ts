/**
 * The push/pull channel between the scheduler and a request's stream: chunks pushed as steps
 * settle, pulled by the consumer's iterator, ended by close or by a typed error.
 */
import type { EngineError } from "../contract/errors.ts";
import type { LLMEngineOutput } from "../contract/types.ts";

/** A push/pull channel: the scheduler pushes chunks, the consumer's iterator pulls them. */
export class Channel {
  #items: LLMEngineOutput[] = [];
  #error: EngineError | undefined;
  #closed = false;
  #wake: (() => void) | undefined;

  push(chunk: LLMEngineOutput): void {
    this.#items.push(chunk);
    this.#wake?.();
  }

  fail(error: EngineError): void {
    this.#error = error;
    this.#closed = true;
    this.#wake?.();
  }

  close(): void {
    this.#closed = true;
    this.#wake?.();
  }

  async *drain(): AsyncGenerator<LLMEngineOutput> {
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.#error) throw this.#error;
      if (this.#closed) return;
      await new Promise<void>((r) => (this.#wake = r));
      this.#wake = undefined;
    }
  }
}
