/**
 * `deno task probe --base URL [--api-key KEY] [--model NAME] [--max-body BYTES]
 * [--max-queued N] [--slow-wait SECONDS] [--long-tokens N] [--cors-origin ORIGIN]`: send a running
 * server the hostile requests of `probe_cases.ts` (wrong content types, Host tricks, DNS
 * rebinding, foreign origins, oversized and slow bodies, bad JSON, disconnects mid-body and
 * mid-stream, a flood past the queue) and report held / FAILED per case. Exits 1 if any case
 * failed.
 */
import { runCli } from "./flags.ts";
import { CASES } from "./probe_cases.ts";
import { Probe, type ProbeOptions } from "./probe_client.ts";

export interface CaseResult {
  name: string;
  /** What went wrong; undefined when the server held. */
  failure: string | undefined;
}

/** Run every case in order against `o.base`; `log` hears each result as it comes. */
export async function probe(
  o: ProbeOptions,
  log: (r: CaseResult) => void = () => {},
): Promise<CaseResult[]> {
  let model = o.model;
  if (model === undefined) {
    const p = new Probe(o, "");
    const res = await p.fetch("/v1/models");
    const list = res.ok ? await res.json() : await res.body?.cancel();
    model = list?.data?.[0]?.id ?? "model";
  }
  const p = new Probe(o, model!);
  const results: CaseResult[] = [];
  for (const c of CASES) {
    let failure: string | undefined;
    try {
      failure = await c.run(p);
    } catch (e) {
      failure = `threw ${(e as Error).message}`;
    }
    const r = { name: c.name, failure };
    results.push(r);
    log(r);
  }
  return results;
}

if (import.meta.main) {
  const { flags, env, fail } = runCli({
    name: "probe",
    command: "deno task probe",
    about: "Send a running server hostile requests and report held / FAILED per case (exit 1 " +
      "if any case failed).",
    flags: {
      base: { type: "string", arg: "URL", required: true, help: "the server's base URL" },
      "api-key": { type: "string", arg: "KEY", help: "the server's API key (or KILN_API_KEY)" },
      model: { type: "string", arg: "NAME", help: "the model to ask for (default: the first)" },
      "max-body": {
        type: "integer",
        min: 1,
        default: 1 << 20,
        arg: "BYTES",
        help: "the server's body limit",
      },
      "max-queued": { type: "integer", min: 1, default: 64, help: "the server's --max-queued" },
      "slow-wait": {
        type: "number",
        min: 0,
        max: 86_400,
        default: 30,
        arg: "SECONDS",
        help: "how long a slow body may wait for its 408",
      },
      "cors-origin": {
        type: "string",
        arg: "ORIGIN",
        help: "an origin the server lists in --cors-origins (its preflight and requests must pass)",
      },
      "long-tokens": {
        type: "integer",
        min: 1,
        default: 512,
        help: "max_tokens of the long streams cut mid-way",
      },
    },
    env: {
      KILN_API_KEY: { type: "string", arg: "KEY", help: "the API key when --api-key is not given" },
    },
  });
  const base = URL.canParse(flags.base)
    ? new URL(flags.base)
    : fail(`--base: expected a URL, got ${JSON.stringify(flags.base)}`);
  const apiKey = flags["api-key"] ?? env.KILN_API_KEY;
  const model = flags.model;
  const corsOrigin = flags["cors-origin"];
  const results = await probe(
    {
      base,
      ...(apiKey ? { apiKey } : {}),
      ...(model ? { model } : {}),
      ...(corsOrigin ? { corsOrigin } : {}),
      maxBodyBytes: flags["max-body"],
      maxQueued: flags["max-queued"],
      slowWaitSeconds: flags["slow-wait"],
      longTokens: flags["long-tokens"],
    },
    (r) =>
      console.log(
        `${r.failure === undefined ? "held  " : "FAILED"} ${r.name}${
          r.failure ? `: ${r.failure}` : ""
        }`,
      ),
  );
  const failed = results.filter((r) => r.failure !== undefined).length;
  console.log(`${results.length - failed} held, ${failed} failed`);
  Deno.exit(failed > 0 ? 1 : 0);
}
