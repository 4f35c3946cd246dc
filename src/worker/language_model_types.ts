/**
 * The types of the Prompt API (the `LanguageModel` interface of the Web Machine Learning
 * community group's draft, webmachinelearning/prompt-api, and the shared `CreateMonitor`,
 * `Availability` and `DestroyableModel` of its writing-assistance APIs), written from their Web
 * IDL with the same member names, plus the options Kiln adds to `create` and `availability`:
 * which model runs the sessions and how it is opened.
 * @module
 */
import type { KilnModel, OpenModelOptions } from "./open.ts";

/** Whether a model can be created: at once, after a download, during one, or not at all. */
export type Availability = "unavailable" | "downloadable" | "downloading" | "available";

/** Who speaks a message. */
export type LanguageModelMessageRole = "system" | "user" | "assistant";

/** What a message's content is; Kiln's sessions take and give `text` only. */
export type LanguageModelMessageType = "text" | "image" | "audio" | "tool-call" | "tool-response";

/** A preset of sampling parameters (the IDL's high-level alternative to `topK`/`temperature`). */
export type LanguageModelSamplingMode =
  | "most-predictable"
  | "predictable"
  | "balanced"
  | "creative"
  | "most-creative";

/**
 * A content part's value: the IDL's `ImageBitmapSource or AudioBuffer or BufferSource or
 * DOMString`; only a string (the `text` type) is accepted by Kiln.
 */
export type LanguageModelMessageValue = string | BufferSource | Blob | object;

/** One part of a message's content. */
export interface LanguageModelMessageContent {
  /** The part's type. */
  type: LanguageModelMessageType;
  /** Its value: a string for `text`. */
  value: LanguageModelMessageValue;
}

/** One message of a prompt. */
export interface LanguageModelMessage {
  /** Who speaks it. */
  role: LanguageModelMessageRole;
  /** Its text, or its parts (a string is one `text` part). */
  content: string | LanguageModelMessageContent[];
  /**
   * The start of the reply, which the model continues: only on a last `assistant` message
   * (default false).
   */
  prefix?: boolean;
}

/** What `prompt` and the like take: a user message's text, or messages. */
export type LanguageModelPrompt = string | LanguageModelMessage[];

/** An input or output the page will use: its type and, optionally, its languages. */
export interface LanguageModelExpected {
  /** The content type. */
  type: LanguageModelMessageType;
  /** BCP 47 language tags. */
  languages?: string[];
}

/** A tool the model may call (in the IDL; refused by Kiln). */
export interface LanguageModelTool {
  /** The tool's name. */
  name: string;
  /** What it does. */
  description: string;
  /** The JSON Schema of its parameters. */
  inputSchema: object;
  /** Runs the call. */
  execute: (...args: unknown[]) => Promise<string>;
}

/** The options `availability` and `create` share. */
export interface LanguageModelCreateCoreOptions {
  /** Sample among this many most likely tokens (an integer >= 1; `Infinity` is the most). */
  topK?: number;
  /** Softmax temperature (>= 0; above `maxTemperature` is clamped). */
  temperature?: number;
  /** A preset of `topK` and `temperature`; not with either of them (default `balanced`). */
  samplingMode?: LanguageModelSamplingMode;
  /** The inputs the page will send. */
  expectedInputs?: LanguageModelExpected[];
  /** The outputs the page wants. */
  expectedOutputs?: LanguageModelExpected[];
  /** Tools the model may call. */
  tools?: LanguageModelTool[];
}

/** Hears a `create`: `downloadprogress` events, `ProgressEvent`s with `loaded` in [0, 1]. */
export interface CreateMonitorLike extends EventTarget {
  /** The `downloadprogress` event handler. */
  ondownloadprogress: ((this: CreateMonitorLike, ev: ProgressEvent) => unknown) | null;
}

/** Called once by `create` with the monitor of its download. */
export type CreateMonitorCallback = (monitor: CreateMonitorLike) => void;

/** The options of `create`. */
export interface LanguageModelCreateOptions extends LanguageModelCreateCoreOptions {
  /** Aborts the creation; once created, aborting destroys the session. */
  signal?: AbortSignal;
  /** Given the monitor of the download before it starts. */
  monitor?: CreateMonitorCallback;
  /** The conversation the session starts with (a `system` message only first). */
  initialPrompts?: LanguageModelMessage[];
}

/** The options of `prompt`, `promptStreaming` and `measureContextUsage`. */
export interface LanguageModelPromptOptions {
  /** A JSON Schema the reply must match (Kiln constrains its decoding to it). */
  responseConstraint?: object;
  /** Leave the constraint out of the model's input (Kiln never puts it in). */
  omitResponseConstraintInput?: boolean;
  /** Aborts the call. */
  signal?: AbortSignal;
}

/** The options of `append`. */
export interface LanguageModelAppendOptions {
  /** Aborts the call. */
  signal?: AbortSignal;
}

/** The options of `clone`. */
export interface LanguageModelCloneOptions {
  /** Aborts the call. */
  signal?: AbortSignal;
}

/** The defaults and limits of the sampling parameters (`LanguageModel.params()`). */
export interface LanguageModelParams {
  /** `topK` of a session created without one. */
  readonly defaultTopK: number;
  /** The largest `topK`; larger ones are clamped to it. */
  readonly maxTopK: number;
  /** `temperature` of a session created without one. */
  readonly defaultTemperature: number;
  /** The largest `temperature`; larger ones are clamped to it. */
  readonly maxTemperature: number;
}

/**
 * The model a Kiln session runs on: what `openModel` opens (a checkpoint's base URL, a `.gguf`
 * URL, or picked `File`s), or a `KilnModel` the page opened itself, which the sessions share and
 * never close.
 */
export type KilnModelSource = string | URL | readonly File[] | KilnModel;

/** What Kiln adds to `create` and `availability`: the model, and how it is opened. */
export interface KilnLanguageModelOptions extends Omit<OpenModelOptions, "model" | "onProgress"> {
  /**
   * The model (required, here or in the defaults of `bindLanguageModel`). Sessions of the same
   * URL or files share one engine, opened by the first `create` with its options and closed
   * when the last of them is destroyed.
   */
  model?: KilnModelSource;
  /** Most tokens of one reply (default: what is left of the context). */
  maxTokens?: number;
}

/** `create`'s options: the IDL's and Kiln's. */
export type KilnLanguageModelCreateOptions = LanguageModelCreateOptions & KilnLanguageModelOptions;

/** `availability`'s options: the IDL's and Kiln's. */
export type KilnLanguageModelAvailabilityOptions =
  & LanguageModelCreateCoreOptions
  & KilnLanguageModelOptions;
