/**
 * Two Kiln servers, one client (issue 26): two `serve` processes with `--kv-events`, a workload
 * whose prefixes go to one server or the other (and one to both), and a subscriber per server
 * (`kv_subscriber.py`, as a KV-aware router's indexer runs one). From the events alone, the test
 * scores each server for each prefix as Dynamo's router does (how many of the prefix's leading
 * blocks, by router hash, the server holds) and finds each prefix on the server that served it.
 * Bad flags stop serve before it loads: an endpoint that cannot bind, a replay socket alone.
 */
import { deepStrictEqual, match, ok, strictEqual as equal } from "node:assert/strict";
import { routerHash, routerHashes } from "../../src/engines/router_hash.ts";
import { type RunningServer, startServer } from "../server/server.ts";
import { startSubscriber } from "../support/kv_subscriber.ts";

const SERVE = new URL("../../src/adapters/deno/serve.ts", import.meta.url).pathname;

/** The endpoints serve says it bound (`serve: KV events bound at ..., replay at ...`). */
async function boundEndpoints(s: RunningServer): Promise<{ pub: string; replay: string }> {
  for (let i = 0; i < 100; i++) {
    const m = s.log().match(/KV events bound at (\S+), replay at (\S+)/);
    if (m) return { pub: m[1]!, replay: m[2]! };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no bound endpoint in serve's log: ${s.log()}`);
}

/** A free TCP port on loopback (bound, then released). */
function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

const enc = (s: string) => [256, ...new TextEncoder().encode(s)];

async function generate(s: RunningServer, tokens: number[]): Promise<void> {
  const res = await fetch(`${s.url}/v1/engine/generate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token_ids: tokens, stop_conditions: { max_tokens: 4 } }),
  });
  equal(res.status, 200);
  await res.text();
}

Deno.test("two servers: the events alone tell which server holds which prefix", async () => {
  const flags = () => {
    const [p, r] = [freePort(), freePort()];
    return ["--kv-events", `tcp://127.0.0.1:${p}`, "--kv-events-replay", `tcp://127.0.0.1:${r}`];
  };
  const servers = [await startServer(flags()), await startServer(flags())];
  try {
    const subs = await Promise.all(
      servers.map(async (s) => startSubscriber(await boundEndpoints(s))),
    );
    // Prefixes of 3 full blocks (48 tokens) and more; each server gets its own, both get one.
    const prefix = (word: string) => enc(`${word} `.repeat(40)).slice(0, 50);
    const own = [["alpha", "bravo"], ["x-ray", "yankee"]];
    const shared = prefix("shared");
    for (const [i, s] of servers.entries()) {
      for (const word of own[i]!) {
        for (const tail of ["one", "two"]) await generate(s, [...prefix(word), ...enc(tail)]);
      }
      await generate(s, [...shared, ...enc(`from ${i}`)]);
    }
    await Promise.all(subs.map((s) => s.done()));
    const sets = (await Promise.all(subs.map((s) => s.result))).map((r) => {
      deepStrictEqual(r.mismatches, []);
      equal(r.live_gaps, 0);
      return new Set(r.blocks);
    });
    // Dynamo's router's overlap score: the leading blocks of a request a server holds.
    const hash = await routerHash();
    const score = (tokens: number[], set: Set<string>) => {
      let n = 0;
      for (const h of routerHashes(hash, tokens, 16)) {
        if (!set.has(String(h))) break;
        n++;
      }
      return n;
    };
    for (const [i, words] of own.entries()) {
      for (const word of words) {
        const request = [...prefix(word), ...enc("three")];
        const scores = sets.map((set) => score(request, set));
        equal(scores[i], 3, `${word}: server ${i} holds its 3 prefix blocks (${scores})`);
        equal(scores[1 - i], 0, `${word}: the other server holds none (${scores})`);
      }
    }
    deepStrictEqual(sets.map((set) => score([...shared, ...enc("again")], set)), [3, 3]);
    // What a router decides: a new request on alpha's prefix goes to server 0, x-ray's to 1.
    const best = (tokens: number[]) => {
      const scores = sets.map((set) => score(tokens, set));
      return scores.indexOf(Math.max(...scores));
    };
    equal(best([...prefix("alpha"), ...enc("new")]), 0);
    equal(best([...prefix("x-ray"), ...enc("new")]), 1);
  } finally {
    for (const s of servers) await s.stop();
  }
});

Deno.test("serve: a KV events endpoint that cannot bind, or a replay socket alone, exits 2", async () => {
  for (
    const [args, why] of [
      [
        ["--kv-events", "tcp://256.1.1.1:5557"],
        /--kv-events tcp:\/\/256\.1\.1\.1:5557: cannot bind/,
      ],
      [["--kv-events-replay", "tcp://127.0.0.1:5558"], /--kv-events-replay needs --kv-events/],
    ] as const
  ) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", SERVE, ...args],
      stdout: "piped",
      stderr: "piped",
    }).output();
    equal(out.code, 2, args.join(" "));
    match(new TextDecoder().decode(out.stderr), why);
    ok(!/listening/.test(new TextDecoder().decode(out.stdout)));
  }
});
