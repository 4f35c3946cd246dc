/**
 * `deno task serve`'s startup lines: authentication on or off (never the key), the bind address
 * and the limits, printed before the model loads; and the flags reaching their typed values.
 */
import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { parseCli } from "./flags.ts";
import { isLoopback, listenFailure, SERVE, startupLines } from "./serve_flags.ts";

const SERVE_CLI = new URL("./serve.ts", import.meta.url).pathname;
const KEY = "s3cret-key-9f2";

function lines(argv: string[], env: Record<string, string> = {}) {
  const r = parseCli(SERVE, argv, (n) => env[n]);
  if (r === "help") throw new Error("unexpected help");
  return { parsed: r, lines: startupLines(r.flags, r.env) };
}

Deno.test("serve flags: typed values and defaults, the new host and CORS lists", () => {
  const { parsed } = lines([
    "--allowed-hosts",
    "kiln.example,localhost",
    "--cors-origins",
    "https://app.example",
    "--max-queued",
    "4",
    "--body-timeout",
    "2.5",
  ]);
  deepStrictEqual(parsed.flags["allowed-hosts"], ["kiln.example", "localhost"]);
  deepStrictEqual(parsed.flags["cors-origins"], ["https://app.example"]);
  equal(parsed.flags["max-queued"], 4);
  equal(parsed.flags["body-timeout"], 2.5);
  equal(parsed.flags.port, 8080);
  equal(parsed.flags.host, "127.0.0.1");
  equal(parsed.flags["drain-timeout"], 30);
  equal(parsed.flags["header-timeout"], 10);
  equal(parsed.flags["keepalive-timeout"], 75);
  const set = lines(["--header-timeout", "0.5", "--keepalive-timeout", "5"]).parsed.flags;
  equal(set["header-timeout"], 0.5);
  equal(set["keepalive-timeout"], 5);
  for (const bad of [["--header-timeout", "0"], ["--keepalive-timeout", "100000"]]) {
    throws(() => lines(bad), new RegExp(bad[0]!), bad.join(" "));
  }
});

Deno.test("serve startup lines: authentication on from either source, never the key", () => {
  const flag = lines(["--api-key", KEY]).lines;
  ok(flag[0]!.includes("authentication on") && flag[0]!.includes("--api-key"), flag[0]!);
  const env = lines([], { KILN_API_KEY: KEY }).lines;
  ok(env[0]!.includes("authentication on") && env[0]!.includes("KILN_API_KEY"), env[0]!);
  const off = lines([]).lines;
  ok(off[0]!.includes("authentication OFF"), off[0]!);
  for (const l of [...flag, ...env, ...off]) ok(!l.includes(KEY), l);
});

Deno.test("serve startup lines: bind address, limits, allowed hosts and CORS origins", () => {
  const all = lines([
    "--host",
    "0.0.0.0",
    "--port",
    "9000",
    "--max-queued",
    "5",
    "--body-timeout",
    "3",
    "--header-timeout",
    "4",
    "--keepalive-timeout",
    "60",
    "--drain-timeout",
    "7",
    "--kv-blocks",
    "99",
    "--max-num-seqs",
    "6",
    "--allowed-hosts",
    "a.example,b.example",
    "--cors-origins",
    "https://x.example",
  ]).lines.join("\n");
  ok(all.includes("bind 0.0.0.0 port 9000"), all);
  ok(
    all.includes(
      "max queued 5, header timeout 4 s, keep-alive timeout 60 s, body timeout 3 s, " +
        "drain timeout 7 s, kv blocks 99, max num seqs 6",
    ),
    all,
  );
  ok(all.includes("allowed hosts: a.example, b.example; CORS origins: https://x.example"), all);
  const loop = lines([]).lines.join("\n");
  ok(loop.includes("allowed hosts: loopback names only"), loop);
  ok(loop.includes("CORS origins: none"), loop);
  ok(lines(["--host", "0.0.0.0"]).lines.join("\n").includes("allowed hosts: not set"));
});

Deno.test("isLoopback: 127/8, ::1 and localhost only", () => {
  for (const h of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"]) {
    ok(isLoopback(h), h);
  }
  for (const h of ["0.0.0.0", "10.0.0.1", "::", "128.0.0.1", "localhost.example", "127.0.0.1.x"]) {
    ok(!isLoopback(h), h);
  }
});

/** A folder that exists but holds no model: serve starts, then fails to load it. */
const EMPTY = Deno.makeTempDirSync({ prefix: "kiln-no-model-" });

async function serve(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SERVE_CLI, "--model", EMPTY, "--port", "0", ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, signal: out.signal, stderr: new TextDecoder().decode(out.stderr) };
}

Deno.test("serve prints its startup lines before loading, without the key", async () => {
  const [flag, env, off] = await Promise.all([
    serve(["--api-key", KEY]),
    serve([], { KILN_API_KEY: KEY }),
    serve([]),
  ]);
  for (const [r, want] of [[flag, "on"], [env, "on"], [off, "OFF"]] as const) {
    // The folder holds no model: serve prints its lines, then fails to load it (exit 2).
    const auth = r.stderr.indexOf(`serve: authentication ${want}`);
    const failed = r.stderr.indexOf(`serve: failed to load ${EMPTY}: `);
    ok(auth >= 0 && failed > auth, r.stderr);
    // One line says why, the loader's own words, and ends the output (no stack, no blank line).
    equal(r.stderr.slice(failed), `serve: failed to load ${EMPTY}: ${EMPTY}/: no tokenizer.json\n`);
    // Deno 2.9.6 on lavapipe sometimes dies by a signal in its exit handlers while the engine's
    // Worker (terminated mid-start here) is torn down (docs/status.md, Known issues; 2 exits in 13
    // on this path here). Only after the whole output above; any other exit fails.
    if (r.signal !== "SIGSEGV" && r.signal !== "SIGABRT") equal(r.code, 2, r.stderr);
    ok(r.stderr.includes("serve: bind 127.0.0.1 port 0"), r.stderr);
    ok(r.stderr.includes("serve: limits: max queued 64, header timeout 10 s"), r.stderr);
    ok(r.stderr.includes("keep-alive timeout 75 s"), r.stderr);
    ok(!r.stderr.includes(KEY), "the key is never printed");
  }
  ok(env.stderr.includes("from KILN_API_KEY"), env.stderr);
  await Deno.remove(EMPTY, { recursive: true });
});

Deno.test("listenFailure: one line for a port in use, a privileged port, a foreign address", () => {
  const held = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = held.addr.port;
    let busy: unknown;
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
    } catch (e) {
      busy = e;
    }
    equal(
      listenFailure(busy, "127.0.0.1", port),
      `port ${port} is in use (another server?); pick another with --port`,
    );
  } finally {
    held.close();
  }
  equal(
    listenFailure(new Deno.errors.PermissionDenied("Permission denied"), "0.0.0.0", 80),
    "port 80 needs privileges to bind (ports below 1024 do); pick another with --port",
  );
  equal(
    listenFailure(new Deno.errors.AddrNotAvailable("x"), "10.9.8.7", 8080),
    "--host 10.9.8.7 is not an address of this machine",
  );
  equal(
    listenFailure(new Error("first\nsecond"), "h", 1),
    "cannot listen on h port 1: first",
  );
});
