/**
 * `stop` strings over streamed text: text that could be the start of a stop string is held back
 * until it is known not to be; a match ends the text there (the stop string itself removed
 * unless `includeStop`).
 */
export class StopStrings {
  #held = "";
  #stopped: string | undefined;
  readonly #longest: number;

  /**
   * A matcher for `stops` (empty strings are ignored).
   *
   * @param stops The stop strings.
   * @param includeStop Keep the matched stop string in the text.
   */
  constructor(readonly stops: readonly string[], readonly includeStop = false) {
    this.stops = stops.filter((s) => s.length > 0);
    this.#longest = Math.max(0, ...this.stops.map((s) => s.length));
  }

  /** The stop string that matched, once one has. */
  get stopped(): string | undefined {
    return this.#stopped;
  }

  /**
   * Add text; returns what can be shown now. After a match, returns "" for everything. With
   * `armed` false (before `min_tokens` are generated) the text is shown as it is and no stop
   * string can match in it, nor start in it.
   */
  push(text: string, armed = true): string {
    if (this.#stopped !== undefined) return "";
    if (this.stops.length === 0) return text;
    if (!armed) return text;
    this.#held += text;
    let at = -1, which = "";
    for (const s of this.stops) {
      const i = this.#held.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) [at, which] = [i, s];
    }
    if (at >= 0) {
      this.#stopped = which;
      const out = this.#held.slice(0, at + (this.includeStop ? which.length : 0));
      this.#held = "";
      return out;
    }
    // Keep the longest tail that is a prefix of some stop string.
    let keep = 0;
    for (let n = Math.min(this.#longest - 1, this.#held.length); n > 0; n--) {
      const tail = this.#held.slice(this.#held.length - n);
      if (this.stops.some((s) => s.startsWith(tail))) {
        keep = n;
        break;
      }
    }
    const out = this.#held.slice(0, this.#held.length - keep);
    this.#held = this.#held.slice(this.#held.length - keep);
    return out;
  }

  /** The stream ended without a match: the held text. */
  flush(): string {
    const out = this.#stopped === undefined ? this.#held : "";
    this.#held = "";
    return out;
  }
}
