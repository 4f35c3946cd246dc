/**
 * Hostile guided decoding for engine tests (Deno and Chromium): refused constraints (see
 * `refused`), each one distinct unless asked, interleaved with valid constrained requests (whose
 * output is checked against their constraint) and free greedy ones (whose tokens must be what
 * they are alone), on the fortune model (a byte vocabulary, EOS 257). Every request is bounded
 * in time: a hang fails the run instead of stalling it.
 */
import { type LLMEngine, RequestContext } from "../../src/contract/engine.ts";
import { EngineError } from "../../src/contract/errors.ts";
import type { PreprocessedRequest } from "../../src/contract/types.ts";

const EOS = 257;
const FIELD = "request.sampling_options.guided_decoding";

/** A schema nested `depth` objects deep, its innermost key `key`. */
export function nested(depth: number, key: string): Record<string, unknown> {
  let s: Record<string, unknown> = { type: "integer" };
  for (let d = 0; d < depth; d++) {
    s = { type: "object", properties: { [d === 0 ? key : "a"]: s }, required: [d ? "a" : key] };
  }
  return s;
}

/**
 * The `k`th refused constraint: its `guided_decoding` and the option it must be refused by.
 * Twelve kinds in turn: JSON Schemas (an unknown type, a `$ref` to nothing, nesting 100 deep)
 * and regexes (an unclosed class or group, a reversed repetition, groups nested 300 deep), which
 * XGrammar's own converters refused or trapped on and Kiln's compilers now refuse first; and EBNF
 * XGrammar refuses (an undefined rule, an unclosed group, a bad escape, a reversed class) or
 * traps on (nested 300 deep: a WASM `RuntimeError`).
 */
export function refused(k: number): { g: Record<string, unknown>; key: string } {
  const n = `k${k}`;
  const deep = (open: string, inner: string) => open.repeat(300) + inner + ")".repeat(300);
  switch (k % 12) {
    case 0:
      return {
        key: "json",
        g: { json: { type: "object", properties: { [n]: { type: "strin" } } } },
      };
    case 1:
      return { key: "grammar", g: { grammar: `root ::= "a" ${n}_undefined` } };
    case 2:
      return { key: "regex", g: { regex: `[0-9${n}` } };
    case 3:
      return { key: "json", g: { json: { $ref: `#/$defs/${n}` } } };
    case 4:
      return { key: "grammar", g: { grammar: `root ::= "${n}" (` } };
    case 5:
      return { key: "regex", g: { regex: `(${n}|b` } };
    case 6:
      return { key: "json", g: { json: nested(100, n) } };
    case 7:
      return { key: "grammar", g: { grammar: `root ::= "${n}" "\\q"` } };
    case 8:
      return { key: "regex", g: { regex: `${n}a{2,1}` } };
    case 9:
      return { key: "grammar", g: { grammar: `root ::= "${n}" [z-a]` } };
    case 10:
      return { key: "grammar", g: { grammar: `root ::= ${deep("(", `"${n}"`)}` } };
    default:
      return { key: "regex", g: { regex: deep("(", n) } };
  }
}

/** A small closed schema, checked here by hand (no validator needed in a page). */
export const SMALL_SCHEMA = {
  type: "object",
  properties: {
    mood: { enum: ["calm", "wild"] },
    score: { type: "integer", minimum: 1, maximum: 9 },
    tags: { type: "array", items: { type: "boolean" }, minItems: 1, maxItems: 2 },
  },
  required: ["mood", "score", "tags"],
  additionalProperties: false,
};

function checkSmall(text: string): boolean {
  const v = JSON.parse(text);
  return Object.keys(v).sort().join(",") === "mood,score,tags" &&
    ["calm", "wild"].includes(v.mood) && Number.isInteger(v.score) && v.score >= 1 &&
    v.score <= 9 && Array.isArray(v.tags) && v.tags.length >= 1 && v.tags.length <= 2 &&
    v.tags.every((t: unknown) => typeof t === "boolean");
}

/** Valid constraints, and whether an output satisfies each. */
export const VALID: { g: Record<string, unknown>; prompt: string; ok: (t: string) => boolean }[] = [
  { g: { json: SMALL_SCHEMA }, prompt: "Your fortune: ", ok: checkSmall },
  { g: { regex: "[0-9]{3}-(ab|cd)" }, prompt: "Call ", ok: (t) => /^[0-9]{3}-(ab|cd)$/.test(t) },
  {
    g: { choice: ["yes", "no", "maybe"] },
    prompt: "Will I? ",
    ok: (t) => /^(yes|no|maybe)$/.test(t),
  },
  {
    g: { grammar: 'root ::= greet " " name "!"\ngreet ::= "hi" | "hello"\nname ::= [a-z]{1,6}' },
    prompt: "Say ",
    ok: (t) => /^(hi|hello) [a-z]{1,6}!$/.test(t),
  },
];

const bytes = (s: string) => [256, ...new TextEncoder().encode(s)];
export const text = (ids: number[]): string => new TextDecoder().decode(Uint8Array.from(ids));

/** A request on fortune: greedy free (`g` undefined) or guided at temperature 1. */
export function hostileRequest(
  prompt: string,
  g: Record<string, unknown> | undefined,
  seed: number,
  maxTokens = 200,
): PreprocessedRequest {
  return {
    model: "fortune",
    token_ids: bytes(prompt),
    stop_conditions: { max_tokens: maxTokens },
    sampling_options: g ? { temperature: 1, seed, guided_decoding: g } : { temperature: 0 },
    output_options: {},
    eos_token_ids: [EOS],
    annotations: [],
  };
}

/** Run `req` to its end within `ms`: its tokens and finish reason (a hang throws). */
export async function runBounded(
  e: LLMEngine,
  req: PreprocessedRequest,
  ms = 120_000,
): Promise<{ ids: number[]; finish: unknown }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no end within ${ms} ms (a hang)`)), ms);
  });
  const run = (async () => {
    const ids: number[] = [];
    let finish: unknown;
    for await (const c of e.generate(req, new RequestContext())) {
      ids.push(...c.token_ids);
      finish = c.finish_reason ?? finish;
    }
    return { ids, finish };
  })();
  try {
    return await Promise.race([run, hang]);
  } finally {
    clearTimeout(timer);
  }
}

/** Text a refusal must never show: the library's traps, memory bytes, its internals. */
const LEAKS = /RuntimeError|memory access|null function|signature mismatch|Aborted\(|unreachable/;

/** Throws unless `e` is `InvalidArgument` naming `key`'s option in Kiln's words. */
export function assertRefusal(e: unknown, key: string, what: string): void {
  const err = e as Partial<EngineError>;
  if (err?.type !== "InvalidArgument" || err.param !== `${FIELD}.${key}`) {
    throw new Error(`${what}: not InvalidArgument naming ${key}: ${err?.type} ${e}`);
  }
  if (LEAKS.test(err.message ?? "")) throw new Error(`${what}: leaks the library: ${err.message}`);
}

/** How a run went. */
export interface HostileReport {
  refused: number;
  valid: number;
  free: number;
  ms: number;
}

/**
 * `refusedTotal` refused constraints (`refused(k)`; `repeat` > 1 sends each that many times) in
 * waves of `perWave`, each wave beside `validPerWave` valid constrained requests (each kind in
 * turn) and one free greedy request, all at once: every refusal is `InvalidArgument` naming its option, every valid
 * output satisfies its constraint and ends `eos`, every free output is its tokens alone.
 */
export async function hostileRun(
  e: LLMEngine,
  { refusedTotal, perWave = 20, validPerWave = 2, repeat = 1, first = 0 }: {
    refusedTotal: number;
    perWave?: number;
    validPerWave?: number;
    repeat?: number;
    first?: number;
  },
): Promise<HostileReport> {
  const t0 = performance.now();
  const free = hostileRequest("You will ", undefined, 0, 24);
  const alone = (await runBounded(e, free)).ids;
  const report: HostileReport = { refused: 0, valid: 0, free: 0, ms: 0 };
  for (let k = 0, wave = 0; k < refusedTotal; wave++) {
    const jobs: Promise<void>[] = [];
    for (let i = 0; i < perWave && k < refusedTotal; i++, k++) {
      const { g, key } = refused(first + Math.floor(k / repeat));
      jobs.push(
        runBounded(e, hostileRequest("x", g, k)).then(
          (r) => {
            throw new Error(`refused #${k} ${JSON.stringify(g).slice(0, 80)} ran: ${r.finish}`);
          },
          (err) => {
            assertRefusal(err, key, `refused #${k} ${JSON.stringify(g).slice(0, 80)}`);
            report.refused++;
          },
        ),
      );
    }
    for (let i = 0; i < validPerWave; i++) {
      const n = wave * validPerWave + i;
      const v = VALID[n % VALID.length]!;
      jobs.push(
        runBounded(e, hostileRequest(v.prompt, v.g, n)).then((r) => {
          const out = text(r.ids);
          if (r.finish !== "eos" || !v.ok(out)) {
            throw new Error(`valid ${JSON.stringify(v.g).slice(0, 60)}: ${r.finish} ${out}`);
          }
          report.valid++;
        }),
      );
    }
    jobs.push(
      runBounded(e, free).then((r) => {
        if (r.ids.join() !== alone.join()) throw new Error(`free: ${r.ids} != ${alone}`);
        report.free++;
      }),
    );
    await Promise.all(jobs);
  }
  report.ms = performance.now() - t0;
  return report;
}

/** Inter-token gaps of a stream, in ms: median, 90th percentile, largest. */
export interface Gaps {
  tokens: number;
  median: number;
  p90: number;
  max: number;
}

function gapStats(times: number[]): Gaps {
  const gaps = times.slice(1).map((t, i) => t - times[i]!).sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round(gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))]! * 10) / 10;
  return { tokens: times.length, median: at(0.5), p90: at(0.9), max: at(1) };
}

/**
 * A free greedy stream's inter-token gaps (`tokens` tokens, EOS ignored), alone or while
 * `compiles` `choice` constraints of `strings` strings each, all distinct, are compiled: they
 * are sent at once just before the stream starts. Their outcomes are counted as they come
 * (compiled, refused) until the stream ends; what is still compiling then is left running.
 * `threadLagMs`: the longest this thread (the engine's) was kept from a 2 ms timer meanwhile.
 */
export async function freeGaps(
  e: LLMEngine,
  { tokens = 120, compiles = 0, strings = 60_000 } = {},
): Promise<{ gaps: Gaps; threadLagMs: number; compiled: number; refused: number; why: string[] }> {
  // Warm: the engine's kernels compiled, its first steps taken.
  await runBounded(e, hostileRequest("You will ", undefined, 0, 16));
  const outcome = { compiled: 0, refused: 0, why: [] as string[] };
  const ctx: RequestContext[] = [];
  for (let c = 0; c < compiles; c++) {
    const choice = Array.from({ length: strings }, (_, i) => `c${c}s${i}x${(i * 7919) % 10007}`);
    const context = new RequestContext();
    ctx.push(context);
    void (async () => {
      for await (const _ of e.generate(hostileRequest("Pick: ", { choice }, c, 8), context)) {
        // the first chunk: compiled, its first mask made
        outcome.compiled++;
        context.stop();
        break;
      }
    })().catch((err) => {
      outcome.refused++;
      outcome.why.push(String(err?.message ?? err).slice(0, 200));
    });
  }
  const req = hostileRequest("You will ", undefined, 0, tokens);
  req.stop_conditions = { max_tokens: tokens, ignore_eos: true };
  const times: number[] = [];
  // How long this thread was kept from running a 2 ms timer: its longest task.
  let lag = 0, last = performance.now();
  const probe = setInterval(() => {
    const now = performance.now();
    lag = Math.max(lag, now - last - 2);
    last = now;
  }, 2);
  try {
    for await (const c of e.generate(req, new RequestContext())) {
      for (const _ of c.token_ids) times.push(performance.now());
    }
  } finally {
    clearInterval(probe);
  }
  for (const c of ctx) c.stop();
  return { gaps: gapStats(times), threadLagMs: Math.round(lag), ...outcome };
}
