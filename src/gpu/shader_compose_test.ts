import {
  deepStrictEqual as assertEquals,
  notStrictEqual as notEqual,
  ok,
  strictEqual as equal,
} from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { testGpu, withErrorScopes } from "../../test/support/gpu.ts";
import { composeShader, parseVariant, shaderVariant } from "./shader_compose.ts";
import { computePipeline, pipelineCounts, shaderSource } from "./shader.ts";

/** An in-memory `shaders/` folder; records each read. */
function folder(files: Record<string, string>) {
  const reads: string[] = [];
  const load = (path: string) => {
    reads.push(path);
    if (!Object.hasOwn(files, path)) return Promise.reject(new Error(`${path}: 404 Not Found`));
    return Promise.resolve(files[path]!);
  };
  return { load, reads };
}

const FILES = {
  "kernel.wgsl": "// kernel\n//! import lib/a\n//! import part/{kind}\nfn main() {}\n",
  "lib/a.wgsl": "//! import lib/b\nfn a() {}\n",
  "lib/b.wgsl": "fn b() {}",
  "part/x.wgsl": "//! import lib/a\n  //!   import lib/b  \nfn part_x() {}\n",
  "part/y.wgsl": "fn part_y() {}\n",
};

async function rejectsWith(p: Promise<unknown>, ...includes: string[]): Promise<void> {
  try {
    await p;
  } catch (e) {
    ok(e instanceof EngineError, String(e));
    equal(e.type, "InvalidArgument");
    for (const s of includes) ok(e.message.includes(s), `${JSON.stringify(s)} in: ${e.message}`);
    return;
  }
  throw new Error(`no error (expected one mentioning ${includes.join(", ")})`);
}

Deno.test("composeShader: imports resolve recursively, each file once, in place of their lines", async () => {
  const { load, reads } = folder(FILES);
  const text = await composeShader("kernel:kind=x", load);
  assertEquals(reads, ["kernel.wgsl", "lib/a.wgsl", "lib/b.wgsl", "part/x.wgsl"]);
  const defs = [...text.matchAll(/fn (\w+)\(/g)].map((m) => m[1]);
  assertEquals(defs, ["b", "a", "part_x", "main"]);
  ok(!/^\s*\/\/!/m.test(text), "no directive left");
  equal(text.match(/already imported/g)?.length, 2); // part/x's lib/a and lib/b
});

Deno.test("composeShader: the variant's parameters pick the files; each variant its own text", async () => {
  const x = await composeShader("kernel:kind=x", folder(FILES).load);
  const y = await composeShader("kernel:kind=y", folder(FILES).load);
  ok(x.includes("fn part_x()") && !x.includes("fn part_y()"));
  ok(y.includes("fn part_y()") && !y.includes("fn part_x()"));
  equal(await composeShader("lib/b", folder(FILES).load), "fn b() {}");
});

Deno.test("composeShader: a missing fragment, placeholder or directive fails naming the variant and the file", async () => {
  const { load } = folder(FILES);
  await rejectsWith(
    composeShader("kernel:kind=z", load),
    "shader kernel:kind=z",
    "shaders/part/z.wgsl (imported by kernel.wgsl)",
    "404",
  );
  await rejectsWith(composeShader("nothing", load), "cannot read shaders/nothing.wgsl");
  await rejectsWith(composeShader("kernel", load), "no parameter kind (line 3 of kernel.wgsl)");
  await rejectsWith(
    composeShader("kernel:kind=x,spare=1", load),
    "parameter spare is used by no import",
  );
  const odd = folder({ "k.wgsl": "//! include lib/a\n", "j.wgsl": "//! import ../secret\n" });
  await rejectsWith(composeShader("k", odd.load), 'unknown directive "//! include lib/a"');
  await rejectsWith(composeShader("j", odd.load), 'bad import "../secret"');
});

Deno.test("variant strings: canonical (sorted parameters), and malformed ones refused", async () => {
  equal(shaderVariant("product/matvec", { format: "q4_k" }), "product/matvec:format=q4_k");
  equal(shaderVariant("k", { b: "2", a: "1" }), "k:a=1,b=2");
  equal(shaderVariant("logits"), "logits");
  assertEquals(parseVariant("k:a=1,b=2"), { file: "k", params: { a: "1", b: "2" } });
  for (
    const [bad, why] of [
      ["k:b=2,a=1", "sorted"],
      ["k:a", "not key=value"],
      ["k:a=1,a=1", "given twice"],
      ["k:a=Q4", "[a-z0-9_]+"],
      ["../k", "not a shader file name"],
      ["", "not a shader file name"],
    ]
  ) {
    await rejectsWith(Promise.resolve().then(() => parseVariant(bad!)), why!);
  }
});

Deno.test("shaderSource and computePipeline key composed variants separately, once each", async () => {
  const [a, b] = await Promise.all(
    ["product/matvec:format=q8_0", "product/matvec:format=q6_k"].map(shaderSource),
  );
  ok(a!.includes("const BLOCK_BYTES: u32 = 34u;") && !a!.includes("210u;"));
  ok(b!.includes("const BLOCK_BYTES: u32 = 210u;") && !b!.includes("34u;"));
  equal(shaderSource("product/matvec:format=q8_0"), shaderSource("product/matvec:format=q8_0"));
  await rejectsWith(shaderSource("product/matvec:format=q9_9"), "shaders/formats/q9_9.wgsl");
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const before = pipelineCounts(device).requested;
    const p8 = computePipeline(device, "product/matvec:format=q8_0", "embed");
    const p6 = computePipeline(device, "product/matvec:format=q6_k", "embed");
    equal(computePipeline(device, "product/matvec:format=q8_0", "embed"), p8);
    notEqual(p8, p6);
    const [g8, g6] = await Promise.all([p8, p6]);
    ok(g8.label.includes("product/matvec:format=q8_0") && g6.label.includes("format=q6_k"));
    equal(pipelineCounts(device).requested - before, 2);
  });
});
