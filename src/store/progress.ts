/** Download progress: bytes, a rate over a recent window, and the time left at that rate. */
import type { TransferProgress } from "../formats/source.ts";

/** Bytes and times of a transfer, for its rate over the last `windowMs`. */
export class Meter {
  #samples: { t: number; n: number }[] = [];

  /**
   * @param total Bytes in all.
   * @param loaded Bytes present at the start (an earlier try's, not counted in the rate).
   * @param now The clock (ms).
   * @param windowMs How far back the rate looks.
   */
  constructor(
    readonly total: number,
    public loaded: number,
    readonly now: () => number = () => performance.now(),
    readonly windowMs = 5000,
  ) {}

  /** `n` more bytes arrived over the network. */
  add(n: number): void {
    this.loaded += n;
    const t = this.now();
    this.#samples.push({ t, n: this.loaded });
    while (this.#samples.length > 2 && t - this.#samples[1]!.t > this.windowMs) {
      this.#samples.shift();
    }
  }

  /** The bytes were dropped (the file changed): count from `loaded` again. */
  reset(loaded: number): void {
    this.loaded = loaded;
    this.#samples = [];
  }

  /** Where the transfer stands. */
  progress(): TransferProgress {
    const first = this.#samples[0], last = this.#samples[this.#samples.length - 1];
    const dt = first && last ? (last.t - first.t) / 1000 : 0;
    const bytesPerSecond = dt > 0 ? (last!.n - first!.n) / dt : 0;
    const left = Math.max(0, this.total - this.loaded);
    return {
      loaded: this.loaded,
      total: this.total,
      bytesPerSecond,
      secondsLeft: left === 0 ? 0 : bytesPerSecond > 0 ? left / bytesPerSecond : undefined,
    };
  }
}
