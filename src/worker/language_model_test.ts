import {
  deepStrictEqual,
  match,
  notStrictEqual as notEqual,
  ok,
  rejects,
  strictEqual as equal,
  throws,
} from "node:assert/strict";
import { rangeServer } from "../../test/support/range_server.ts";
import { assertValid } from "../../test/support/json_schema.ts";
import { encodeChat } from "../text/load.ts";
import { bindLanguageModel, installLanguageModel, KilnLanguageModel } from "./language_model.ts";
import { openModel } from "./open.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;

/** A rejection (or throw) that is a `DOMException` named `name`. */
const dom = (name: string) => (e: unknown) => {
  ok(e instanceof DOMException, `${e}`);
  equal(e.name, name, e.message);
  return true;
};

const SCHEMA = {
  type: "object",
  properties: {
    mood: { enum: ["calm", "wild"] },
    score: { type: "integer", minimum: 1, maximum: 9 },
  },
  required: ["mood", "score"],
  additionalProperties: false,
};

/** A reply that cannot end before 400 characters (a byte-level model: 400 tokens). */
const LONG = { type: "string", minLength: 400 };

/** Read one piece of `stream`, then cancel it. */
async function firstPiece(stream: ReadableStream<string>): Promise<void> {
  const reader = stream.getReader();
  ok(!(await reader.read()).done);
  await reader.cancel();
}

/** Read `reader` to its end (or its error). */
async function drain(reader: ReadableStreamDefaultReader<string>): Promise<void> {
  while (!(await reader.read()).done) { /* on */ }
}

async function read(stream: ReadableStream<string>): Promise<string[]> {
  const chunks: string[] = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

Deno.test("LanguageModel refusals before any load: types, tools, options, no constructor", async () => {
  const model = "http://127.0.0.1:9/none/";
  await rejects(
    KilnLanguageModel.create({ model, expectedInputs: [{ type: "image" }] }),
    (e) => dom("NotSupportedError")(e) && /expectedInputs: "image"/.test((e as Error).message),
  );
  await rejects(
    KilnLanguageModel.create({ model, expectedOutputs: [{ type: "text" }, { type: "audio" }] }),
    (e) => dom("NotSupportedError")(e) && /expectedOutputs: "audio"/.test((e as Error).message),
  );
  const tool = { name: "f", description: "", inputSchema: {}, execute: () => Promise.resolve("") };
  await rejects(KilnLanguageModel.create({ model, tools: [tool] }), dom("NotSupportedError"));
  await rejects(KilnLanguageModel.create({ model, samplingMode: "creative", topK: 3 }), TypeError);
  await rejects(KilnLanguageModel.create({ model, topK: 0 }), RangeError);
  await rejects(KilnLanguageModel.create({ model, temperature: NaN }), RangeError);
  await rejects(
    KilnLanguageModel.create({ model, expectedInputs: [{ type: "text", languages: ["??"] }] }),
    RangeError,
  );
  await rejects(KilnLanguageModel.create({}), /model: required/);
  await rejects(
    KilnLanguageModel.create({
      model,
      initialPrompts: [{ role: "user", content: "a" }, {
        role: "system",
        content: "late",
      }],
    }),
    TypeError,
  );
  const gone = new AbortController();
  gone.abort(new Error("stop"));
  await rejects(KilnLanguageModel.create({ model, signal: gone.signal }), /stop/);
  equal(
    await KilnLanguageModel.availability({ model, expectedInputs: [{ type: "audio" }] }),
    "unavailable",
  );
  equal(await KilnLanguageModel.availability({ model }), "downloadable");
  deepStrictEqual(await KilnLanguageModel.params(), {
    defaultTopK: 40,
    maxTopK: 1024,
    defaultTemperature: 0.8,
    maxTemperature: 2,
  });
  throws(() => new KilnLanguageModel(), /Illegal constructor/);
});

Deno.test("LanguageModel on fortune's URL: progress, shared engine, prompt, stream, append, clone, destroy", async () => {
  const server = rangeServer(FORTUNE);
  const progress: number[] = [];
  const LanguageModel = bindLanguageModel({ model: server.base, engine: { kvBlocks: 64 } });
  try {
    equal(await LanguageModel.availability(), "downloadable");
    const creating = LanguageModel.create({
      maxTokens: 6,
      initialPrompts: [{ role: "system", content: "You tell fortunes." }],
      monitor(m) {
        m.addEventListener("downloadprogress", (e) => progress.push((e as ProgressEvent).loaded));
      },
    });
    equal(await LanguageModel.availability(), "downloading");
    const session = await creating;
    ok(session instanceof LanguageModel && session instanceof KilnLanguageModel);
    equal(progress[0], 0);
    equal(progress.at(-1), 1);
    ok(progress.every((p, i) => i === 0 || p > progress[i - 1]!), `${progress}`);
    equal(await LanguageModel.availability(), "available");
    equal(session.contextWindow, 1024);
    equal(session.inputQuota, 1024);
    ok(session.contextUsage > 0, "the system prompt counts");
    equal(session.samplingMode, "balanced");
    deepStrictEqual([session.topK, session.temperature], [40, 0.8]);

    const before = session.contextUsage;
    const reply = await session.prompt("Tell me a fortune");
    equal(typeof reply, "string");
    ok(session.contextUsage > before, "the turn joined the conversation");
    const chunks = await read(session.promptStreaming("Another"));
    ok(chunks.length > 0 && chunks.every((c) => typeof c === "string" && c.length > 0));
    const appended = session.contextUsage;
    equal(await session.append([{ role: "user", content: "More." }]), undefined);
    ok(session.contextUsage > appended);
    equal(session.inputUsage, session.contextUsage);

    // A second session of the same URL shares the engine: no second load, progress 0 then 1.
    const second: number[] = [];
    const other = await LanguageModel.create({
      monitor(m) {
        m.ondownloadprogress = (e) => second.push(e.loaded);
      },
    });
    deepStrictEqual(second, [0, 1]);
    const copy = await session.clone();
    equal(copy.contextUsage, session.contextUsage);
    await copy.prompt("Only the clone hears this");
    ok(copy.contextUsage > session.contextUsage, "the clone's conversation is its own");
    session.destroy();
    await rejects(session.prompt("x"), dom("InvalidStateError"));
    await rejects(session.clone(), dom("InvalidStateError"));
    throws(() => session.promptStreaming("x"), dom("InvalidStateError"));
    equal(session.contextWindow, 1024, "attributes stay readable");
    equal(typeof await copy.prompt("The clone lives on"), "string");
    copy.destroy();
    other.destroy();
    // The last session gone, the engine is closed: the model is no longer held here.
    equal(await LanguageModel.availability(), "downloadable");
  } finally {
    await server.shutdown();
  }
});

Deno.test("LanguageModel on an open KilnModel: usage counts, constraint, abort, quota, overflow", async () => {
  const server = rangeServer(FORTUNE);
  const model = await openModel({ model: server.base, engine: { kvBlocks: 64 } });
  try {
    equal(await KilnLanguageModel.availability({ model }), "available");
    const session = await KilnLanguageModel.create({ model, maxTokens: 4 });
    equal(session.contextUsage, 0);
    const hi = [{ role: "user", content: "Hi" }];
    equal(
      await session.measureContextUsage("Hi"),
      encodeChat(model.text, hi, { addGenerationPrompt: false }).length,
    );
    equal(
      await session.measureContextUsage([{
        role: "user",
        content: [{ type: "text", value: "H" }, { type: "text", value: "i" }],
      }]),
      await session.measureInputUsage("Hi"),
    );
    await rejects(
      session.measureContextUsage("Hi", { omitResponseConstraintInput: true }),
      TypeError,
    );
    await rejects(
      session.prompt([{ role: "user", content: [{ type: "image", value: new Blob() }] }]),
      dom("NotSupportedError"),
    );
    await rejects(
      session.prompt([{ role: "user", content: "a", prefix: true }]),
      dom("SyntaxError"),
    );
    await rejects(session.prompt("x", { responseConstraint: /x+/ }), dom("NotSupportedError"));

    const reply = await session.prompt("Hi");
    const turn = [...hi, { role: "assistant", content: reply }];
    equal(
      session.contextUsage,
      encodeChat(model.text, turn, { addGenerationPrompt: false }).length,
    );

    // A JSON Schema constrains the reply (guided decoding).
    const json = await KilnLanguageModel.create({ model, samplingMode: "creative" });
    const text = await json.prompt("A fortune as JSON", { responseConstraint: SCHEMA });
    assertValid(SCHEMA, JSON.parse(text));
    await rejects(json.prompt("x", { responseConstraint: { type: 1 } }), dom("NotSupportedError"));

    // Aborted: the signal's reason, and the turn does not join the conversation. A reply held
    // to 400 characters or more is still running when another session's first piece comes.
    const usage = session.contextUsage;
    const long = await KilnLanguageModel.create({ model });
    const stop = new AbortController();
    const running = long.prompt("Go on", { signal: stop.signal, responseConstraint: LONG });
    await firstPiece(session.promptStreaming("Meanwhile"));
    stop.abort();
    await rejects(running, dom("AbortError"));
    equal(long.contextUsage, 0);
    const cut = new AbortController();
    const reader = long.promptStreaming("Go on", { signal: cut.signal, responseConstraint: LONG })
      .getReader();
    ok(!(await reader.read()).done, "streaming");
    cut.abort();
    await rejects(drain(reader), dom("AbortError"));
    equal(long.contextUsage, 0);
    const queued = new AbortController();
    const waiting = long.prompt("Queued", { signal: queued.signal });
    queued.abort();
    await rejects(waiting, dom("AbortError"));
    // Destroyed mid-reply: InvalidStateError, as Chrome reports it.
    const ending = long.prompt("Go on", { responseConstraint: LONG });
    await firstPiece(json.promptStreaming("Meanwhile"));
    long.destroy();
    await rejects(ending, dom("InvalidStateError"));
    equal(session.contextUsage, usage, "a cancelled stream leaves no turn");

    // Too long for the context: QuotaExceededError, nothing evicted.
    const huge = "x".repeat(1100);
    await rejects(session.prompt(huge), (e) => {
      dom("QuotaExceededError")(e);
      const q = e as DOMException & { requested: number; quota: number };
      ok(q.requested > 1024, `${q.requested}`);
      equal(q.quota, 1024);
      return true;
    });
    equal(session.contextUsage, usage);

    // Fits only without earlier turns: they are evicted, oldest first, and contextoverflow fires
    // (by append, which runs nothing on the engine: a prefill this long takes lavapipe a while).
    const filler = await KilnLanguageModel.create({
      model,
      initialPrompts: [{ role: "system", content: "kept" }],
    });
    let overflows = 0;
    filler.oncontextoverflow = () => overflows++;
    let quota = 0;
    filler.addEventListener("quotaoverflow", () => quota++);
    const turn300 = (c: string) => [{ role: "user" as const, content: c.repeat(300) }];
    for (const c of "abc") await filler.append(turn300(c));
    const full = filler.contextUsage;
    ok(full > 900 && full <= 1024, `${full}`);
    equal(overflows, 0);
    await filler.append(turn300("d"));
    deepStrictEqual([overflows, quota], [1, 1]);
    const kept = encodeChat(model.text, [
      { role: "system", content: "kept" },
      ...["b", "c", "d"].flatMap(turn300),
    ], { addGenerationPrompt: false });
    equal(filler.contextUsage, kept.length, "the first append evicted, the system prompt kept");
    for (const s of [session, json, filler]) s.destroy();
  } finally {
    await model.close();
    await server.shutdown();
  }
});

Deno.test("installLanguageModel: only where absent, unless replace", () => {
  const had = Object.getOwnPropertyDescriptor(globalThis, "LanguageModel");
  try {
    delete (globalThis as { LanguageModel?: unknown }).LanguageModel;
    ok(installLanguageModel({ model: "http://127.0.0.1:9/a/" }));
    const first = (globalThis as { LanguageModel?: unknown }).LanguageModel;
    ok(typeof first === "function" && first.prototype instanceof KilnLanguageModel);
    equal(installLanguageModel({ model: "http://127.0.0.1:9/b/" }), false);
    equal((globalThis as { LanguageModel?: unknown }).LanguageModel, first);
    ok(installLanguageModel({ model: "http://127.0.0.1:9/b/" }, { replace: true }));
    notEqual((globalThis as { LanguageModel?: unknown }).LanguageModel, first);
    match(String(Object.keys(globalThis)), /^(?!.*LanguageModel)/, "not enumerable");
  } finally {
    delete (globalThis as { LanguageModel?: unknown }).LanguageModel;
    if (had) Object.defineProperty(globalThis, "LanguageModel", had);
  }
});
