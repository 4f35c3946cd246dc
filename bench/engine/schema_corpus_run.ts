/**
 * The corpus run of `bench/engine/schema_corpus.ts` (and, on a sample, of
 * `test/server/schema_corpus_test.ts`): every schema of the JSON Schema corpus through a live
 * `serve`'s token route as `guided_decoding.json`, seeded completions at temperature 1, each
 * answer classified. See `schema_corpus.ts` for what is counted.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { startServer } from "../../test/server/server.ts";
import { ndjsonLines, postGenerate } from "../../test/support/engine_route.ts";

const ROOT = new URL("../../", import.meta.url);

/** How the run goes. */
export interface CorpusOptions {
  /** Completions per schema. */
  completions: number;
  /** Every n-th schema of the corpus (1: all). */
  every: number;
  /** `max_tokens` of each completion. */
  maxTokens: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** Progress lines. */
  log?: (line: string) => void;
}

/** What happened, counted, and the cases to look at. */
export interface CorpusReport {
  options: Omit<CorpusOptions, "log">;
  totals: {
    schemas: number;
    refused: number;
    /** Refusals whose message names no keyword of docs/json_schema.md. */
    refusedUnnamed: number;
    completions: number;
    stop: number;
    length: number;
    otherFinish: number;
    valid: number;
    /** Ended `stop`, and not valid JSON for the schema: must be 0. */
    acceptedInvalid: number;
    /** Ended `stop` where ajv itself gets the schema's own suite instances wrong. */
    unverifiable: number;
    serverErrors: number;
    hangs: number;
    restarts: number;
  };
  /** Refusals by keyword. */
  refusedBy: Record<string, number>;
  /** Every case that must not happen, with what was seen. */
  problems: { id: string; what: string }[];
  seconds: number;
}

interface Entry {
  id: string;
  schema: unknown;
  tests?: { data: unknown; valid: boolean }[];
}

/** Every keyword named in the first column of docs/json_schema.md's table. */
async function tableKeywords(): Promise<Set<string>> {
  const doc = await Deno.readTextFile(new URL("docs/json_schema.md", ROOT));
  const out = new Set<string>();
  for (const line of doc.split("\n")) {
    const first = line.startsWith("|") ? line.split("|")[1] ?? "" : "";
    for (const m of first.matchAll(/`([^`]+)`/g)) out.add(m[1]!);
  }
  return out;
}

/** The token route's body: fortune's BOS, "JSON: ", the schema as the constraint. */
function body(schema: unknown, seed: number, maxTokens: number): string {
  return JSON.stringify({
    token_ids: [256, ...new TextEncoder().encode("JSON: ")],
    stop_conditions: { max_tokens: maxTokens },
    sampling_options: { temperature: 1, seed, guided_decoding: { json: schema } },
  });
}

/** Run the corpus (see the module's notes). */
export async function runCorpus(o: CorpusOptions): Promise<CorpusReport> {
  const corpus = JSON.parse(
    await Deno.readTextFile(new URL("test/fixtures/schemas/corpus.json", ROOT)),
  ).schemas as Entry[];
  const keywords = await tableKeywords();
  const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, ownProperties: true });
  addFormats.default(ajv);
  const entries = corpus.filter((_, i) => i % o.every === 0);
  const t = {
    schemas: entries.length,
    refused: 0,
    refusedUnnamed: 0,
    completions: 0,
    stop: 0,
    length: 0,
    otherFinish: 0,
    valid: 0,
    acceptedInvalid: 0,
    unverifiable: 0,
    serverErrors: 0,
    hangs: 0,
    restarts: 0,
  };
  const refusedBy: Record<string, number> = {};
  const problems: { id: string; what: string }[] = [];
  const s = await startServer(["--max-queued", String(4 * o.concurrency)]);
  const t0 = performance.now();
  const jobs = entries.flatMap((e, i) =>
    Array.from({ length: o.completions }, (_, k) => ({ e, seed: i * 7 + k }))
  );
  const refusedIds = new Set<string>();
  let next = 0, done = 0;
  const validator = validators(ajv);
  const one = async ({ e, seed }: { e: Entry; seed: number }) => {
    if (refusedIds.has(e.id)) return; // refused once: the same answer again
    const res = await postGenerate(
      s.url,
      body(e.schema, seed, o.maxTokens),
      {},
      AbortSignal.timeout(60_000),
    ).catch((err) => err as Error);
    if (res instanceof Error) {
      t.hangs++;
      problems.push({ id: e.id, what: `no answer in 60 s: ${res.message}` });
      return;
    }
    if (res.status >= 500) {
      t.serverErrors++;
      const what = `${res.status}: ${await res.text()}`;
      problems.push({ id: e.id, what });
      if (t.serverErrors <= 3) o.log?.(`${e.id}: ${what}`);
      if (t.serverErrors === 1) o.log?.(`serve's log, last lines:\n${s.log().slice(-3000)}`);
      return;
    }
    if (res.status !== 200) {
      const { error } = await res.json();
      if (refusedIds.has(e.id)) return;
      refusedIds.add(e.id);
      t.refused++;
      const named = /guided_decoding\.json: (\S+) at "#/.exec(error.message)?.[1];
      if (error.code !== "InvalidArgument" || named === undefined || !keywords.has(named)) {
        t.refusedUnnamed++;
        problems.push({ id: e.id, what: `refusal naming no keyword: ${error.message}` });
      } else refusedBy[named] = (refusedBy[named] ?? 0) + 1;
      return;
    }
    const bytes: number[] = [];
    let finish: unknown;
    try {
      for await (const c of ndjsonLines(res)) {
        bytes.push(...c.token_ids.filter((id) => id < 256));
        if (c.finish_reason !== undefined) finish = c.finish_reason;
      }
    } catch (err) {
      // The stream stalled past the request's 60 s (or broke off): a hang, not a completion.
      t.hangs++;
      problems.push({ id: e.id, what: `stream broke off: ${(err as Error).message}` });
      return;
    }
    t.completions++;
    if (finish === "length") return void t.length++;
    if (finish !== "stop") {
      t.otherFinish++;
      return void problems.push({ id: e.id, what: `finish ${JSON.stringify(finish)}` });
    }
    t.stop++;
    const text = new TextDecoder().decode(new Uint8Array(bytes));
    const verdict = validator(e, text);
    if (verdict === "valid") t.valid++;
    else if (verdict === "unverifiable") t.unverifiable++;
    else {
      t.acceptedInvalid++;
      problems.push({
        id: e.id,
        what: `accepted, then invalid: ${text.slice(0, 200)} (${verdict})`,
      });
    }
  };
  try {
    await Promise.all(Array.from({ length: o.concurrency }, async () => {
      while (next < jobs.length) {
        await one(jobs[next++]!);
        if (++done % 100 === 0) o.log?.(`${done}/${jobs.length} (${JSON.stringify(t)})`);
      }
    }));
  } finally {
    t.restarts = (s.log().match(/restarting/g) ?? []).length;
    await s.stop();
  }
  const { log: _, ...options } = o;
  return {
    options,
    totals: t,
    refusedBy,
    problems,
    seconds: Math.round((performance.now() - t0) / 1000),
  };
}

/**
 * The verdict on a completion's text: `valid`, `unverifiable` (ajv gets this schema's own suite
 * instances wrong, so its word is no check), or why it is invalid.
 */
function validators(ajv: Ajv2020) {
  const cache = new Map<string, ((v: unknown) => boolean) | undefined>();
  const compiled = (e: Entry) => {
    if (cache.has(e.id)) return cache.get(e.id);
    let f: ((v: unknown) => boolean) | undefined;
    try {
      const v = ajv.compile(e.schema as object);
      const trusted = (e.tests ?? []).every((x) => v(x.data) === x.valid);
      f = trusted ? (x) => v(x) as boolean : undefined;
    } catch {
      f = undefined;
    }
    cache.set(e.id, f);
    return f;
  };
  return (e: Entry, text: string): string => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      return `not JSON: ${(err as Error).message}`;
    }
    const f = compiled(e);
    if (f === undefined) return "unverifiable";
    return f(value) ? "valid" : "fails the schema";
  };
}
