/**
 * `deno task probe --base URL [--api-key KEY] [--model NAME] [--max-body BYTES]
 * [--max-queued N] [--slow-wait SECONDS] [--long-tokens N] [--cors-origin ORIGIN]`: send a running
 * server the hostile requests of `probe_cases.ts` (wrong content types, Host tricks, DNS
 * rebinding, foreign origins, oversized and slow bodies, bad JSON, disconnects mid-body and
 * mid-stream, a flood past the queue) and report held / FAILED per case. Exits 1 if any case
 * failed.
 */
import { CASES, Probe, type ProbeOptions } from "./probe_cases.ts";

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
  const args = new Map<string, string>();
  for (let i = 0; i < Deno.args.length; i += 2) {
    args.set(Deno.args[i]!.replace(/^--/, ""), Deno.args[i + 1] ?? "");
  }
  const base = args.get("base");
  if (!base) {
    console.error("usage: probe --base URL [--api-key KEY] [--model NAME] [--max-queued N]");
    Deno.exit(2);
  }
  const apiKey = args.get("api-key") ?? Deno.env.get("KILN_API_KEY");
  const model = args.get("model");
  const corsOrigin = args.get("cors-origin");
  const results = await probe(
    {
      base: new URL(base),
      ...(apiKey ? { apiKey } : {}),
      ...(model ? { model } : {}),
      ...(corsOrigin ? { corsOrigin } : {}),
      maxBodyBytes: Number(args.get("max-body") ?? 1 << 20),
      maxQueued: Number(args.get("max-queued") ?? 64),
      slowWaitSeconds: Number(args.get("slow-wait") ?? 30),
      longTokens: Number(args.get("long-tokens") ?? 512),
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
