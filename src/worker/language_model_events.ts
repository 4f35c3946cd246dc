/**
 * The events of Kiln's `LanguageModel`: the `CreateMonitor` that `create` hands its `monitor`
 * callback, the `downloadprogress` events it fires (as the writing-assistance APIs' shared
 * infrastructure specifies them: `ProgressEvent`s with `loaded` a fraction in [0, 1] rounded
 * down to 1/65,536, `total` 1, never going back, at most one per 50 ms but always 0 first and 1
 * last), and `on<type>` event handler attributes.
 */
import type { LoadProgress } from "../runtime/load_options.ts";
import type { CreateMonitorLike } from "./language_model_types.ts";

/** `on<type>` attributes of an `EventTarget`: one listener per type, the handler it calls. */
export class EventHandlers {
  readonly #slots = new Map<
    string,
    { handler: unknown; listener: { handleEvent(e: unknown): void } }
  >();

  /** Bound to the `EventTarget` it serves. */
  constructor(readonly target: EventTarget) {}

  /** The handler of `type`, or null. */
  get(type: string): unknown {
    return this.#slots.get(type)?.handler ?? null;
  }

  /** Set the handler of `type` (a function; anything else removes it). */
  set(type: string, handler: unknown): void {
    const old = this.#slots.get(type);
    if (old) this.target.removeEventListener(type, old.listener);
    this.#slots.delete(type);
    if (typeof handler !== "function") return;
    const listener = { handleEvent: (e: unknown) => void handler.call(this.target, e) };
    this.target.addEventListener(type, listener);
    this.#slots.set(type, { handler, listener });
  }
}

/** What `create` hands its `monitor` callback: `downloadprogress` events fire on it. */
export class CreateMonitor extends EventTarget implements CreateMonitorLike {
  readonly #handlers = new EventHandlers(this);

  /** The `downloadprogress` event handler. */
  get ondownloadprogress(): CreateMonitorLike["ondownloadprogress"] {
    return this.#handlers.get("downloadprogress") as CreateMonitorLike["ondownloadprogress"];
  }

  set ondownloadprogress(handler: CreateMonitorLike["ondownloadprogress"]) {
    this.#handlers.set("downloadprogress", handler);
  }
}

const STEPS = 65_536;
const INTERVAL_MS = 50;

/**
 * The `downloadprogress` events of one `create`, from Kiln's load progress: the download of the
 * model's files into the model store, or, where nothing is stored first (no store, `cache:
 * false`, a model read from files), the weights' load; the later phases (uploading stored
 * weights, compiling pipelines) are the model's initialization, after 1.
 */
export class DownloadProgress {
  #last = -1;
  #at = 0;
  #phase: string | undefined;
  #stopped = false;

  /** Fires on `monitor` (none where there is no monitor). */
  constructor(readonly monitor: CreateMonitor | undefined) {}

  /** Fire `loaded` (a fraction), rounded down, if it moved on and is not too soon. */
  fire(loaded: number): void {
    if (this.#stopped || this.monitor === undefined) return;
    const q = Math.floor(Math.min(1, Math.max(0, loaded)) * STEPS) / STEPS;
    const now = performance.now();
    if (q <= this.#last || (q < 1 && this.#last >= 0 && now - this.#at < INTERVAL_MS)) return;
    this.#last = q;
    this.#at = now;
    this.monitor.dispatchEvent(
      new ProgressEvent("downloadprogress", { loaded: q, total: 1, lengthComputable: true }),
    );
  }

  /** Hears the load (see the class). */
  readonly hear: LoadProgress = (done, total, _item, phase) => {
    if (phase === "pipelines") return;
    this.#phase ??= phase;
    if (phase !== this.#phase) this.fire(1);
    else if (total > 0) this.fire(done / total);
  };

  /** The download is done (fire 1, if not yet); nothing fires after. */
  finish(): void {
    this.fire(1);
    this.#stopped = true;
  }

  /** The `create` was aborted: nothing fires after. */
  stop(): void {
    this.#stopped = true;
  }
}
