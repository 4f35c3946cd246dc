/**
 * Chrome's Prompt API over Kiln: `KilnLanguageModel` has the members of the IDL's
 * `LanguageModel` (static `create`, `availability`, `params`; `prompt`, `promptStreaming`,
 * `append`, `measureContextUsage`, `contextUsage`, `contextWindow`, `clone`, `destroy`, the
 * `contextoverflow` event, and the deprecated `measureInputUsage`, `inputUsage`, `inputQuota`,
 * `quotaoverflow`), so that code written for the browser's built-in model runs on a Kiln model
 * in any browser with WebGPU. A session keeps its conversation as chat messages, rendered with
 * the model's chat template for each prompt and run through `KilnModel.completions`;
 * `responseConstraint` is guided decoding. `installLanguageModel` puts it at
 * `globalThis.LanguageModel` with a default model (nothing is installed on import).
 * @module
 */
import {
  acquire,
  type EngineLease,
  hasWebGpu,
  modelAvailability,
} from "./language_model_engines.ts";
import { Conversation } from "./language_model_conversation.ts";
import { CreateMonitor, DownloadProgress, EventHandlers } from "./language_model_events.ts";
import {
  abortable,
  apiError,
  canonicalPrompt,
  constraintFormat,
  createChoices,
  domError,
  loadError,
  openOptions,
  PARAMS,
  sampling,
  unsupported,
} from "./language_model_input.ts";
import type {
  Availability,
  KilnLanguageModelAvailabilityOptions,
  KilnLanguageModelCreateOptions,
  KilnLanguageModelOptions,
  LanguageModelAppendOptions,
  LanguageModelCloneOptions,
  LanguageModelParams,
  LanguageModelPrompt,
  LanguageModelPromptOptions,
  LanguageModelSamplingMode,
} from "./language_model_types.ts";
import { KilnModel } from "./open.ts";

export { CreateMonitor } from "./language_model_events.ts";
export type * from "./language_model_types.ts";

/** What a session is: its hold on the engine, and its conversation. */
interface State {
  lease: EngineLease;
  conversation: Conversation;
}

const destroyed = () => domError("InvalidStateError", "The session has been destroyed.");

/** The defaults each class made by `bindLanguageModel` merges under its `create` options. */
const DEFAULTS = new WeakMap<object, KilnLanguageModelOptions>();
/** The state of the session under construction (the IDL's interface has no constructor). */
let constructing: State | undefined;

/** A session of a Kiln model with the Prompt API's `LanguageModel` interface. */
export class KilnLanguageModel extends EventTarget {
  readonly #s: State;
  readonly #ended = new AbortController();
  readonly #handlers = new EventHandlers(this);
  #queue: Promise<unknown> = Promise.resolve();

  /** Sessions come from `create` and `clone`; called directly, a `TypeError`. */
  constructor() {
    super();
    if (constructing === undefined) throw new TypeError("Illegal constructor");
    this.#s = constructing;
    constructing = undefined;
  }

  /**
   * A session on `options.model` (or the bound default), loading it unless this realm holds it;
   * `monitor` hears `downloadprogress`. Rejects with `NotSupportedError` for types other than
   * text, tools, or no WebGPU; `QuotaExceededError` when `initialPrompts` overflow the context;
   * the signal's reason when aborted (after creation, aborting destroys the session);
   * `OperationError` (`NetworkError` for a connection failure) when the load fails, with Kiln's
   * error as its `cause`.
   */
  static async create(options: KilnLanguageModelCreateOptions = {}): Promise<KilnLanguageModel> {
    const Class = typeof this === "function" ? this : KilnLanguageModel;
    const o: KilnLanguageModelCreateOptions = { ...DEFAULTS.get(Class), ...options };
    const { sampling: chosen, initial, model: source, maxTokens } = createChoices(o);
    const signal = o.signal;
    signal?.throwIfAborted();
    let monitor: CreateMonitor | undefined;
    if (o.monitor !== undefined) o.monitor(monitor = new CreateMonitor());
    if (!(source instanceof KilnModel) && !await hasWebGpu()) {
      throw domError("NotSupportedError", "WebGPU is not available here (no GPU adapter)");
    }
    signal?.throwIfAborted();
    const progress = new DownloadProgress(monitor);
    progress.fire(0);
    const lease = acquire(source, openOptions(o), progress.hear);
    let model: KilnModel;
    try {
      model = await abortable(lease.ready, signal);
    } catch (e) {
      progress.stop();
      lease.release();
      throw signal?.aborted ? e : loadError(e);
    }
    lease.unlisten();
    progress.finish();
    try {
      constructing = {
        lease,
        conversation: new Conversation(model, chosen, maxTokens, initial),
      };
    } catch (e) {
      lease.release();
      throw apiError(e);
    }
    const session = new Class();
    signal?.addEventListener("abort", () => session.#destroy(signal.reason), { once: true });
    return session;
  }

  /**
   * Whether `create` with these options would run at once (`available`), after a download
   * (`downloadable`), during one (`downloading`), or not at all (`unavailable`: types other than
   * text, tools, or no WebGPU). See `modelAvailability` for how a model's files are looked up.
   */
  static async availability(
    options: KilnLanguageModelAvailabilityOptions = {},
  ): Promise<Availability> {
    const Class = typeof this === "function" ? this : KilnLanguageModel;
    const o: KilnLanguageModelAvailabilityOptions = { ...DEFAULTS.get(Class), ...options };
    sampling(o);
    if (unsupported(o) !== undefined) return "unavailable";
    if (o.model === undefined) throw new TypeError("model: required (a URL, files or a KilnModel)");
    if (!(o.model instanceof KilnModel) && !await hasWebGpu()) return "unavailable";
    return await modelAvailability(o.model, o.cache ?? true);
  }

  /** The defaults and limits of `topK` and `temperature` (Kiln's; the same for every model). */
  static params(): Promise<LanguageModelParams> {
    return Promise.resolve(PARAMS);
  }

  /** Tokens the conversation takes now, as the model's chat template renders it. */
  get contextUsage(): number {
    return this.#s.conversation.usage;
  }

  /** Tokens the conversation may take: the model's context length. */
  get contextWindow(): number {
    return this.#s.conversation.window;
  }

  /** `contextUsage`'s deprecated name. */
  get inputUsage(): number {
    return this.contextUsage;
  }

  /** `contextWindow`'s deprecated name. */
  get inputQuota(): number {
    return this.contextWindow;
  }

  /** The `topK` the session samples with. */
  get topK(): number {
    return this.#s.conversation.sampling.topK;
  }

  /** The `temperature` the session samples with. */
  get temperature(): number {
    return this.#s.conversation.sampling.temperature;
  }

  /** The `samplingMode` given to `create` (`balanced` when none was). */
  get samplingMode(): LanguageModelSamplingMode {
    return this.#s.conversation.sampling.samplingMode;
  }

  /** Handler of `contextoverflow`: earlier turns were evicted to fit a prompt. */
  get oncontextoverflow(): ((ev: Event) => unknown) | null {
    return this.#handlers.get("contextoverflow") as ((ev: Event) => unknown) | null;
  }

  set oncontextoverflow(handler: ((ev: Event) => unknown) | null) {
    this.#handlers.set("contextoverflow", handler);
  }

  /** `oncontextoverflow`'s deprecated name (its event is `quotaoverflow`). */
  get onquotaoverflow(): ((ev: Event) => unknown) | null {
    return this.#handlers.get("quotaoverflow") as ((ev: Event) => unknown) | null;
  }

  set onquotaoverflow(handler: ((ev: Event) => unknown) | null) {
    this.#handlers.set("quotaoverflow", handler);
  }

  /**
   * The model's reply to `input` after the conversation so far (both join it). Calls queue
   * behind the session's earlier ones. Rejects with `QuotaExceededError` when the input does not
   * fit even with every evictable turn evicted, `NotSupportedError` for content Kiln refuses (a
   * schema it cannot constrain to, non-text parts), `InvalidStateError` once destroyed, the
   * signal's reason when aborted (the turn then does not join the conversation).
   */
  prompt(input: LanguageModelPrompt, options: LanguageModelPromptOptions = {}): Promise<string> {
    return this.#run(options.signal, (signal) => this.#reply(input, options, signal));
  }

  /**
   * `prompt`'s reply as a stream of its new text, piece by piece (each chunk a delta, as the
   * draft's streaming algorithm and Chrome now give them). Errors as `prompt` rejects;
   * cancelling the stream cancels the generation, and the turn does not join the conversation.
   */
  promptStreaming(
    input: LanguageModelPrompt,
    options: LanguageModelPromptOptions = {},
  ): ReadableStream<string> {
    const cancel = new AbortController();
    let out!: ReadableStreamDefaultController<string>;
    const stream = new ReadableStream<string>({
      start: (c) => void (out = c),
      cancel: (reason) => cancel.abort(reason),
    });
    const signals = [cancel.signal, ...(options.signal ? [options.signal] : [])];
    this.#check(AbortSignal.any(signals));
    const emit = (signal: AbortSignal) => (text: string) => {
      if (!signal.aborted) out.enqueue(text);
    };
    this.#run(
      AbortSignal.any(signals),
      (signal) => this.#reply(input, options, signal, emit(signal)),
    ).then(() => out.close(), (e) => cancel.signal.aborted || out.error(e)).catch(() => {});
    return stream;
  }

  /** Add `input` to the conversation without a reply (queued as `prompt` is; same errors). */
  append(input: LanguageModelPrompt, options: LanguageModelAppendOptions = {}): Promise<undefined> {
    return this.#run(options.signal, (signal) => {
      const c = this.#s.conversation;
      const { messages, prefix } = canonicalPrompt(input, c.started);
      if (prefix) throw domError("NotSupportedError", "prefix is for prompt() only");
      c.fit(messages, "none", this.#overflow);
      if (!signal.aborted) c.commit(messages);
      return Promise.resolve(undefined);
    });
  }

  /**
   * Tokens `input` takes, rendered alone by the model's chat template (its control tokens
   * included). `omitResponseConstraintInput` without a `responseConstraint` is a `TypeError`.
   */
  measureContextUsage(
    input: LanguageModelPrompt,
    options: LanguageModelPromptOptions = {},
  ): Promise<number> {
    try {
      this.#check(options.signal);
      if (options.omitResponseConstraintInput && options.responseConstraint === undefined) {
        throw new TypeError("omitResponseConstraintInput: only with a responseConstraint");
      }
      constraintFormat(options.responseConstraint);
      const { messages } = canonicalPrompt(input, false);
      return Promise.resolve(this.#s.conversation.measure(messages));
    } catch (e) {
      return Promise.reject(apiError(e));
    }
  }

  /** `measureContextUsage`'s deprecated name. */
  measureInputUsage(
    input: LanguageModelPrompt,
    options: LanguageModelPromptOptions = {},
  ): Promise<number> {
    return this.measureContextUsage(input, options);
  }

  /** A session with this one's conversation and options so far, on the same engine. */
  clone(options: LanguageModelCloneOptions = {}): Promise<KilnLanguageModel> {
    try {
      this.#check(options.signal);
    } catch (e) {
      return Promise.reject(e);
    }
    constructing = { lease: this.#s.lease.another(), conversation: this.#s.conversation.copy() };
    return Promise.resolve(new (this.constructor as typeof KilnLanguageModel)());
  }

  /**
   * End the session: calls under way reject (streams error) with `InvalidStateError`, as do
   * later ones; its engine closes once no other session uses it.
   */
  destroy(): void {
    this.#destroy(destroyed());
  }

  #destroy(reason: unknown): void {
    if (this.#ended.signal.aborted) return;
    this.#ended.abort(reason);
    this.#s.lease.release();
  }

  /** Earlier turns were evicted: `contextoverflow` and `quotaoverflow` fire. */
  readonly #overflow = () => {
    this.dispatchEvent(new Event("contextoverflow"));
    this.dispatchEvent(new Event("quotaoverflow"));
  };

  #reply(
    input: LanguageModelPrompt,
    options: LanguageModelPromptOptions,
    signal: AbortSignal,
    emit?: (text: string) => void,
  ): Promise<string> {
    const c = this.#s.conversation;
    const { messages, prefix } = canonicalPrompt(input, c.started);
    return c.reply(messages, prefix, options, signal, this.#overflow, emit);
  }

  /** Throws `InvalidStateError` once destroyed, or `signal`'s reason once aborted. */
  #check(signal: AbortSignal | undefined): void {
    if (this.#ended.signal.aborted) throw destroyed();
    signal?.throwIfAborted();
  }

  /**
   * Run `op` after the session's earlier calls, with a signal that aborts on `signal` or the
   * session's end; the promise rejects as soon as that signal aborts (with its reason).
   */
  #run<T>(signal: AbortSignal | undefined, op: (signal: AbortSignal) => Promise<T>): Promise<T> {
    try {
      this.#check(signal);
    } catch (e) {
      return Promise.reject(e);
    }
    const both = AbortSignal.any([this.#ended.signal, ...(signal ? [signal] : [])]);
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(both.reason);
      both.addEventListener("abort", onAbort, { once: true });
      this.#queue = this.#queue.then(async () => {
        if (both.aborted) return;
        try {
          resolve(await op(both));
        } catch (e) {
          reject(both.aborted ? both.reason : apiError(e));
        } finally {
          both.removeEventListener("abort", onAbort);
        }
      });
    });
  }
}

/**
 * A `LanguageModel` class whose `create` and `availability` take `defaults` (the model, how it
 * is opened, `maxTokens`) under their own options: what `installLanguageModel` installs.
 */
export function bindLanguageModel(defaults: KilnLanguageModelOptions): typeof KilnLanguageModel {
  const Bound = class LanguageModel extends KilnLanguageModel {};
  DEFAULTS.set(Bound, { ...defaults });
  return Bound;
}

/**
 * Install `bindLanguageModel(defaults)` as `globalThis.LanguageModel`, where the realm has none
 * (or with `replace`, over the one it has: Chromium without a built-in model has one whose
 * `availability()` is `"unavailable"`). Returns whether it installed.
 */
export function installLanguageModel(
  defaults: KilnLanguageModelOptions,
  options: { replace?: boolean } = {},
): boolean {
  if (!options.replace && "LanguageModel" in globalThis) return false;
  Object.defineProperty(globalThis, "LanguageModel", {
    value: bindLanguageModel(defaults),
    writable: true,
    configurable: true,
    enumerable: false,
  });
  return true;
}
