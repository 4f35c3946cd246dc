import { deepStrictEqual, ok, rejects, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "./errors.ts";
import * as output from "./output.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "./types.ts";
import { StreamContractError, validateRequest, validateStream } from "./validate.ts";

async function* from(chunks: LLMEngineOutput[]): AsyncGenerator<LLMEngineOutput> {
  for (const c of chunks) yield c;
}

async function collect(stream: AsyncIterable<LLMEngineOutput>): Promise<LLMEngineOutput[]> {
  const out: LLMEngineOutput[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

function violation(kind: string) {
  return (e: unknown) => e instanceof StreamContractError && e.kind === kind;
}

Deno.test("validateStream passes a well-formed stream through unchanged", async () => {
  const chunks = [
    output.token(1),
    output.token(2),
    output.withUsage(output.withTokens(output.eos(), [3]), output.usage(3, 3)),
  ];
  deepStrictEqual(await collect(validateStream(from(chunks), { promptTokens: 3 })), chunks);
});

Deno.test("validateStream rejects a chunk after the terminal chunk", async () => {
  await rejects(
    collect(validateStream(from([output.stop(), output.token(1)]))),
    violation("ChunkAfterTerminal"),
  );
});

Deno.test("validateStream rejects a stream with no terminal chunk", async () => {
  await rejects(collect(validateStream(from([output.token(1)]))), violation("NoTerminalChunk"));
  await rejects(collect(validateStream(from([]))), violation("NoTerminalChunk"));
});

Deno.test("validateStream rejects usage that disagrees with the stream", async () => {
  const bad = [output.token(1), output.withUsage(output.length(), output.usage(3, 2))];
  await rejects(collect(validateStream(from(bad))), violation("UsageMismatch"));
  const badPrompt = [output.token(1), output.withUsage(output.length(), output.usage(4, 1))];
  await rejects(
    collect(validateStream(from(badPrompt), { promptTokens: 3 })),
    violation("UsageMismatch"),
  );
});

Deno.test("a typed error thrown mid-stream propagates unchanged", async () => {
  async function* failing(): AsyncGenerator<LLMEngineOutput> {
    yield output.token(1);
    throw new EngineError("ResourceExhausted", "out of blocks");
  }
  await rejects(collect(validateStream(failing())), (e: unknown) => {
    ok(e instanceof EngineError);
    equal(e.type, "ResourceExhausted");
    return true;
  });
});

const base = (): PreprocessedRequest => ({
  model: "m",
  token_ids: [1, 2],
  stop_conditions: {},
  sampling_options: {},
  output_options: {},
  eos_token_ids: [],
  annotations: [],
});

Deno.test("validateRequest rejects values built in code that JSON cannot carry", () => {
  const nan = base();
  nan.sampling_options.temperature = NaN;
  throws(
    () => validateRequest(nan),
    (e: unknown) =>
      e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes("temperature"),
  );
  const inf = base();
  inf.sampling_options.temperature = Infinity;
  throws(() => validateRequest(inf), /temperature/);
  const frac = base();
  frac.token_ids = [1.5];
  throws(() => validateRequest(frac), /token_ids\[0\]/);
  validateRequest(base());
});
