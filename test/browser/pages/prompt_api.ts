/**
 * Page of test/browser/prompt_api.test.mjs: Kiln's Prompt API (`KilnLanguageModel`) on fortune
 * in Chromium (SwiftShader WebGPU). Its members against the IDL's (and against Chromium's own
 * `LanguageModel`, where this build has one), installing it as `globalThis.LanguageModel`,
 * `availability` before and after the model is stored, `create` with download progress, then
 * what sessions do: prompt, streamed deltas, a JSON Schema constraint, append, clone, usage
 * counts, the context's quota, abort and destroy, and the refusals, each by its DOMException.
 */
import {
  bindLanguageModel,
  CreateMonitor,
  installLanguageModel,
  KilnLanguageModel,
} from "../../../src/worker/language_model.ts";
import { runChecks } from "./report.ts";

function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(message);
}

const MODEL = new URL("/models/fortune/", location.href).href;
const SCHEMA = {
  type: "object",
  properties: {
    mood: { enum: ["calm", "wild"] },
    score: { type: "integer", minimum: 1, maximum: 9 },
  },
  required: ["mood", "score"],
  additionalProperties: false,
};
/** A reply that cannot end before 400 characters: still running after its first piece. */
const LONG = { type: "string", minLength: 400 };

/** The IDL's members: methods by their `length`, attributes by whether they can be set. */
const METHODS = {
  prompt: 1,
  promptStreaming: 1,
  append: 1,
  measureContextUsage: 1,
  measureInputUsage: 1,
  clone: 0,
  destroy: 0,
};
const READONLY = [
  "contextUsage",
  "contextWindow",
  "inputUsage",
  "inputQuota",
  "topK",
  "temperature",
  "samplingMode",
];
const HANDLERS = ["oncontextoverflow", "onquotaoverflow"];
const STATICS = { create: 0, availability: 0, params: 0 };

/** What a member of a prototype is: `method/<length>`, `get`, `get+set`. */
function kind(proto: object, name: string): string {
  const d = Object.getOwnPropertyDescriptor(proto, name);
  if (d === undefined) return "absent";
  if (typeof d.value === "function") return `method/${d.value.length}`;
  return d.set ? "get+set" : d.get ? "get" : "value";
}

/** The rejection of `p` (or what `f` throws) must be a DOMException named `name`. */
async function rejectsWith(name: string, p: Promise<unknown> | (() => unknown)): Promise<void> {
  let error: unknown;
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    error = e;
  }
  assert(error instanceof DOMException, `expected ${name}, got ${error}`);
  assert(error.name === name, `expected ${name}, got ${error.name}: ${error.message}`);
}

/** A check that runs at once, as the runner's asynchronous form. */
const now = (f: () => string | void) => () => Promise.resolve().then(f);

async function read(stream: ReadableStream<string>): Promise<string[]> {
  const out: string[] = [];
  const reader = stream.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) out.push(r.value);
  return out;
}

const native = (globalThis as { LanguageModel?: { prototype: object } }).LanguageModel;
const LM = bindLanguageModel({ model: MODEL, maxTokens: 8, engine: { kvBlocks: 64 } });
let session: KilnLanguageModel | undefined;
const progress: ProgressEvent[] = [];

await runChecks([
  [
    "the IDL's members, with their kinds",
    now(() => {
      const p = KilnLanguageModel.prototype;
      const want: Record<string, string> = {};
      for (const [m, n] of Object.entries(METHODS)) want[m] = `method/${n}`;
      for (const a of READONLY) want[a] = "get";
      for (const h of HANDLERS) want[h] = "get+set";
      const got = Object.fromEntries(Object.keys(want).map((m) => [m, kind(p, m)]));
      assert(JSON.stringify(got) === JSON.stringify(want), JSON.stringify(got));
      for (const [s, n] of Object.entries(STATICS)) {
        assert(
          kind(KilnLanguageModel, s) === `method/${n}`,
          `static ${s}: ${kind(KilnLanguageModel, s)}`,
        );
      }
      assert(p instanceof EventTarget, "an EventTarget");
      assert(kind(CreateMonitor.prototype, "ondownloadprogress") === "get+set", "CreateMonitor");
      assert(new CreateMonitor() instanceof EventTarget, "CreateMonitor is an EventTarget");
      let illegal = false;
      try {
        new KilnLanguageModel();
      } catch (e) {
        illegal = e instanceof TypeError;
      }
      assert(illegal, "no constructor, as the IDL has none");
    }),
  ],
  [
    "every member of Chromium's own LanguageModel, of the same kind",
    now(() => {
      if (native === undefined) return "this Chromium has no LanguageModel";
      const names = [
        ...Object.getOwnPropertyNames(native.prototype).filter((n) => n !== "constructor"),
      ];
      const differ = names.filter((n) =>
        kind(native.prototype, n) !== kind(KilnLanguageModel.prototype, n)
      );
      const statics = ["create", "availability", "params"].filter((n) =>
        kind(native, n) !== "absent" && kind(native, n) !== kind(KilnLanguageModel, n)
      );
      assert(differ.length === 0 && statics.length === 0, `differ: ${differ} ${statics}`);
      return `${names.length} members: ${names.join(", ")}`;
    }),
  ],
  [
    "installLanguageModel: not over the browser's own, unless replace",
    now(() => {
      const before = (globalThis as { LanguageModel?: unknown }).LanguageModel;
      const installed = installLanguageModel({ model: MODEL });
      assert(installed === (before === undefined), `installed ${installed}`);
      assert(installLanguageModel({ model: MODEL }, { replace: true }), "replaced");
      const now = (globalThis as { LanguageModel?: { prototype: object } }).LanguageModel;
      assert(now !== undefined && now.prototype instanceof KilnLanguageModel, "Kiln's");
    }),
  ],
  [
    "availability: downloadable, unavailable for images, RangeError for a bad language",
    async () => {
      assert(await LM.availability() === "downloadable", "not stored yet");
      const image = await LM.availability({ expectedInputs: [{ type: "image" }] });
      assert(image === "unavailable", image);
      let range = false;
      await LM.availability({ expectedInputs: [{ type: "text", languages: ["??"] }] })
        .catch((e) => range = e instanceof RangeError);
      assert(range, "RangeError");
      await rejectsWith("NotSupportedError", LM.create({ expectedOutputs: [{ type: "audio" }] }));
    },
  ],
  ["create: downloadprogress from 0 to 1, then available", async () => {
    session = await LM.create({
      initialPrompts: [{ role: "system", content: "You tell fortunes." }],
      monitor(m) {
        m.addEventListener("downloadprogress", (e) => progress.push(e as ProgressEvent));
      },
    });
    const loaded = progress.map((e) => e.loaded);
    assert(progress.every((e) => e instanceof ProgressEvent && e.total === 1), "ProgressEvents");
    assert(loaded[0] === 0 && loaded.at(-1) === 1 && loaded.length >= 2, `${loaded}`);
    assert(loaded.every((l, i) => i === 0 || l > loaded[i - 1]!), `${loaded}`);
    assert(await LM.availability() === "available", "available");
    assert(session.contextWindow === 1024 && session.contextUsage > 0, `${session.contextUsage}`);
    return `${loaded.length} events`;
  }],
  ["prompt and promptStreaming: the same greedy reply, streamed as deltas", async () => {
    const greedy = await LM.create({ samplingMode: "most-predictable" });
    assert(greedy.topK === 1 && greedy.temperature === 0, `${greedy.topK} ${greedy.temperature}`);
    const twin = await greedy.clone();
    const whole = await greedy.prompt("Tell me a fortune");
    const stream = twin.promptStreaming("Tell me a fortune");
    assert(stream instanceof ReadableStream, "a ReadableStream");
    const chunks = await read(stream);
    assert(chunks.every((c) => typeof c === "string" && c.length > 0), JSON.stringify(chunks));
    assert(chunks.join("") === whole, `${JSON.stringify(chunks)} vs ${JSON.stringify(whole)}`);
    assert(greedy.contextUsage === twin.contextUsage, "both turns joined");
    greedy.destroy();
    twin.destroy();
    return `${chunks.length} chunks: ${JSON.stringify(whole)}`;
  }],
  ["responseConstraint: JSON that parses and matches the schema", async () => {
    const s = await LM.create({ maxTokens: 200 });
    const text = await s.prompt("A fortune as JSON", { responseConstraint: SCHEMA });
    const v = JSON.parse(text);
    assert(
      Object.keys(v).sort().join() === "mood,score" && ["calm", "wild"].includes(v.mood) &&
        Number.isInteger(v.score) && v.score >= 1 && v.score <= 9,
      text,
    );
    await rejectsWith("NotSupportedError", s.prompt("x", { responseConstraint: /x/ }));
    s.destroy();
    return text;
  }],
  ["append, measureContextUsage, clone: usage counts, clones apart", async () => {
    const s = session!;
    const usage = s.contextUsage;
    assert(await s.append("I was born in May.") === undefined, "append resolves undefined");
    assert(s.contextUsage > usage && s.inputUsage === s.contextUsage, `${s.contextUsage}`);
    const n = await s.measureContextUsage("Hello");
    assert(n > 0 && n === await s.measureInputUsage([{ role: "user", content: "Hello" }]), `${n}`);
    const copy = await s.clone();
    assert(copy.contextUsage === s.contextUsage, "the clone starts where it is");
    await copy.prompt("And?");
    assert(copy.contextUsage > s.contextUsage, "only the clone's conversation grew");
    copy.destroy();
  }],
  ["QuotaExceededError for an input beyond the context, nothing evicted", async () => {
    const s = session!;
    const usage = s.contextUsage;
    await rejectsWith("QuotaExceededError", s.prompt("x".repeat(1100)));
    const e = await s.prompt("x".repeat(1100)).catch((e) => e);
    assert(e.requested > 1024 && e.quota === 1024, `${e.requested} ${e.quota}`);
    assert(s.contextUsage === usage, "nothing evicted");
    await rejectsWith("SyntaxError", s.prompt([{ role: "user", content: "a", prefix: true }]));
  }],
  ["abort: AbortError before and during a reply, the turn left out", async () => {
    const s = session!;
    const usage = s.contextUsage;
    await rejectsWith("AbortError", s.prompt("x", { signal: AbortSignal.abort() }));
    const stop = new AbortController();
    const reader = s.promptStreaming("Go on", { signal: stop.signal, responseConstraint: LONG })
      .getReader();
    assert(!(await reader.read()).done, "a first piece");
    stop.abort();
    await rejectsWith("AbortError", async () => {
      while (!(await reader.read()).done) { /* pieces queued before the abort, if any */ }
    });
    assert(s.contextUsage === usage, "no turn joined");
  }],
  ["destroy: InvalidStateError after, attributes still readable", async () => {
    const s = session!;
    s.destroy();
    await rejectsWith("InvalidStateError", s.prompt("x"));
    await rejectsWith("InvalidStateError", s.append("x"));
    await rejectsWith("InvalidStateError", s.clone());
    await rejectsWith("InvalidStateError", () => s.promptStreaming("x"));
    assert(s.contextWindow === 1024, "readable");
    // The last session gone, the engine is closed; the model is in the model store now.
    assert(await LM.availability() === "available", "stored whole");
  }],
]);
