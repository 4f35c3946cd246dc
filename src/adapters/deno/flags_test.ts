import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { type CliSpec, type FlagTable, parseCli, parseEnv, usage } from "./flags.ts";

const FLAGS = {
  model: { type: "string", help: "the model", required: true },
  name: { type: "string", help: "a name" },
  port: { type: "integer", min: 0, max: 65535, default: 8080, help: "the port" },
  "kv-blocks": { type: "integer", min: 1, help: "KV blocks" },
  timeout: { type: "number", min: 0, default: 10, help: "seconds" },
  engine: { type: "enum", choices: ["webgpu", "ort"], default: "webgpu", help: "engine" },
  hosts: { type: "list", help: "host names" },
  quant: { type: "list", choices: ["q8_0", "q4_0"], help: "mixes" },
  batches: { type: "integers", min: 1, default: [1, 8], help: "batch sizes" },
  quick: { type: "boolean", help: "fewer rounds" },
} as const satisfies FlagTable;

const ENV = {
  KILN_SEED: { type: "integer", min: 0, help: "seed" },
  KILN_KEY: { type: "string", help: "a key" },
} as const satisfies FlagTable;

const SPEC: CliSpec<typeof FLAGS, typeof ENV> = {
  name: "tool",
  command: "deno task tool",
  about: "A tool for the tests.",
  flags: FLAGS,
  env: ENV,
};
const noEnv = () => undefined;
const parse = (...argv: string[]) => {
  const r = parseCli(SPEC, argv, noEnv);
  if (r === "help") throw new Error("unexpected help");
  return r;
};

/** Parsing `argv` throws InvalidArgument whose message contains every one of `needles`. */
function refused(argv: string[], ...needles: string[]) {
  throws(() => parseCli(SPEC, argv, noEnv), (e: unknown) => {
    ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
    for (const n of needles) ok(e.message.includes(n), `${JSON.stringify(argv)}: ${e.message}`);
    return true;
  });
}

Deno.test("flags: typed values, defaults, both --name value and --name=value", () => {
  const r = parse(
    "--model",
    "m",
    "--port=0",
    "--timeout",
    "2.5",
    "--engine",
    "ort",
    "--hosts",
    "a.example, b.example",
    "--quant=q4_0,q8_0",
    "--batches",
    "1,4",
    "--quick",
  );
  // The declared types reach the caller: these assignments are type-checked.
  const port: number = r.flags.port;
  const engine: "webgpu" | "ort" = r.flags.engine;
  const quant: ("q8_0" | "q4_0")[] | undefined = r.flags.quant;
  const kv: number | undefined = r.flags["kv-blocks"];
  deepStrictEqual(r.flags, {
    model: "m",
    name: undefined,
    port: 0,
    "kv-blocks": undefined,
    timeout: 2.5,
    engine: "ort",
    hosts: ["a.example", "b.example"],
    quant: ["q4_0", "q8_0"],
    batches: [1, 4],
    quick: true,
  });
  equal(port, 0);
  equal(engine, "ort");
  deepStrictEqual(quant, ["q4_0", "q8_0"]);
  equal(kv, undefined);
  const d = parse("--model", "m");
  equal(d.flags.port, 8080);
  equal(d.flags.engine, "webgpu");
  deepStrictEqual(d.flags.batches, [1, 8]);
  equal(d.flags.quick, false);
  deepStrictEqual(d.args, []);
});

Deno.test("flags: each bad command line is InvalidArgument naming the flag", () => {
  refused(["--model", "m", "--api-kye", "s3cret"], "unknown flag --api-kye");
  refused(["--model", "m", "--api-kye=s3cret"], "unknown flag --api-kye");
  for (
    const argv of [["--api-kye", "s3cret"], ["--api-kye=s3cret"], ["s3cret", "--x"], ["s3cret"]]
  ) {
    throws(() => parseCli(SPEC, ["--model", "m", ...argv], noEnv), (e: Error) => {
      ok(!e.message.includes("s3cret"), e.message); // an unknown flag's value is not echoed
      return true;
    });
  }
  refused(["--model", "m", "--port"], "--port", "missing");
  refused(["--model", "--port", "1"], "--model");
  refused(["--model", "m", "--port", "abc"], "--port", "integer from 0 to 65535", '"abc"');
  refused(["--model", "m", "--port", "70000"], "--port", "70000");
  refused(["--model", "m", "--port", "1.5"], "--port", "1.5");
  refused(["--model", "m", "--port", "1e3"], "--port", "1e3");
  refused(["--model", "m", "--port", ""], "--port");
  refused(["--model", "m", "--kv-blocks", "-1"], "--kv-blocks"); // a dash: taken for a flag
  refused(["--model", "m", "--kv-blocks=-1"], "--kv-blocks", ">= 1", '"-1"');
  refused(["--model", "m", "--kv-blocks=0"], "--kv-blocks", '"0"');
  refused(["--model", "m", "--timeout", "soon"], "--timeout", "number");
  refused(["--model", "m", "--timeout=-1"], "--timeout", '"-1"');
  refused(["--model", "m", "--timeout", "0x10"], "--timeout", '"0x10"');
  refused(["--model", "m", "--timeout", "Infinity"], "--timeout");
  refused(["--model", "m", "--timeout", " 5"], "--timeout");
  equal(parse("--model", "m", "--timeout", "1e-1").flags.timeout, 0.1);
  equal(parse("--model", "m", "--timeout", ".5").flags.timeout, 0.5);
  refused(["--model", "m", "--engine", "cuda"], "--engine", "webgpu, ort", '"cuda"');
  refused(["--model", "m", "--quant", "q4_0,q3_k"], "--quant", '"q3_k"');
  refused(["--model", "m", "--hosts", "a,,b"], "--hosts", "comma-separated");
  refused(["--model", "m", "--batches", "1,x"], "--batches", '"x"');
  refused(["--model", "m", "--batches", "1,0"], "--batches", '"0"');
  refused(["--model", "m", "--name="], "--name", "empty");
  refused(["--model", "m", "--quick=yes"], "--quick");
  refused(["--model", "a", "--model", "b"], "--model", "more than once");
  refused(["--model", "m", "--quick", "--quick"], "--quick", "more than once");
  refused(["--model", "m", "stray"], "unexpected argument 3", "only flags");
  refused(["--model", "m", "--name", "a", "b"], "unexpected argument 5");
  refused(["--port", "1"], "--model", "required");
});

Deno.test("flags: --help and -h win, even beside a bad flag", () => {
  equal(parseCli(SPEC, ["--help"], noEnv), "help");
  equal(parseCli(SPEC, ["-h"], noEnv), "help");
  equal(parseCli(SPEC, ["--nope", "--port", "x", "-h"], noEnv), "help");
  equal(parseCli(SPEC, ["--model", "m", "--help"], noEnv), "help");
});

Deno.test("flags: positional arguments only where declared, and as many as declared", () => {
  const spec: CliSpec<{ out: { type: "string"; help: string } }> = {
    name: "p",
    command: "p",
    about: "p",
    flags: { out: { type: "string", help: "out" } },
    args: { usage: "IN [OUT]", min: 1, max: 2, help: "files" },
  };
  const r = parseCli(spec, ["a", "--out", "o", "b"], noEnv);
  ok(r !== "help");
  deepStrictEqual(r.args, ["a", "b"]);
  deepStrictEqual((parseCli(spec, ["--", "-x"], noEnv) as { args: string[] }).args, ["-x"]);
  throws(() => parseCli(spec, [], noEnv), /missing argument: IN \[OUT\]/);
  throws(() => parseCli(spec, ["a", "b", "c"], noEnv), /at most 2 arguments.*"c"/);
});

Deno.test("flags: environment variables are checked like flags and named when bad", () => {
  const env = (vars: Record<string, string>) => (n: string) => vars[n];
  const r = parseCli(SPEC, ["--model", "m"], env({ KILN_SEED: "7", KILN_KEY: "k" }));
  ok(r !== "help");
  deepStrictEqual(r.env, { KILN_SEED: 7, KILN_KEY: "k" });
  deepStrictEqual(parseEnv(ENV, env({ KILN_SEED: "" })), {
    KILN_SEED: undefined,
    KILN_KEY: undefined,
  });
  for (const bad of ["x", "-1", "1.5", "7 "]) {
    throws(
      () => parseEnv(ENV, env({ KILN_SEED: bad })),
      (e: unknown) =>
        e instanceof EngineError && e.message.startsWith("KILN_SEED: expected an integer"),
    );
  }
  throws(() => parseCli(SPEC, ["--model", "m"], env({ KILN_SEED: "x" })), /KILN_SEED/);
});

Deno.test("flags: the usage text lists every flag with its value, range and default", () => {
  const text = usage(SPEC);
  ok(text.startsWith("usage: deno task tool [options]\n"), text);
  for (const name of Object.keys(FLAGS)) ok(text.includes(`--${name}`), name);
  ok(/--port N +the port \(from 0 to 65535; default 8080\)/.test(text), text);
  ok(text.includes("--engine webgpu|ort"), text);
  ok(text.includes("(required)"), text);
  ok(text.includes("-h, --help"), text);
  ok(/KILN_SEED=N +seed \(>= 0\)/.test(text), text);
});
