/**
 * `baseline.ts`: each replaced kernel, read from git at the commit its tag marks, is the very
 * WGSL the benchmarks kept as a copy under `bench/baselines/` until those copies were deleted
 * (read back from the last commit that held them), with the entry points the benchmarks
 * dispatch; a tag this clone lacks is an error that names it and the command that makes it.
 * Needs the repository's history: skipped in a shallow clone but for the error's test.
 */
import { ok, rejects, strictEqual } from "node:assert/strict";
import { type Baseline, type BaselineKernel, BASELINES, readBaseline } from "./baseline.ts";

/** The last commit that kept the copies (`bench/baselines/<kernel>.wgsl`). */
const COPIES = "34a835f";

/** The entry points the benchmarks dispatch in each kernel. */
const ENTRIES: Record<BaselineKernel, string[]> = {
  attention: ["single", "split", "merge"],
  matmul: ["tiled"],
  matvec: ["main"],
  sampling: ["sample"],
};

async function git(...args: string[]): Promise<{ ok: boolean; text: string }> {
  const out = await new Deno.Command("git", {
    args,
    cwd: new URL("../../", import.meta.url).pathname,
    stdout: "piped",
    stderr: "null",
  }).output();
  return { ok: out.success, text: new TextDecoder().decode(out.stdout) };
}

const shallow = (await git("rev-parse", "--is-shallow-repository")).text.trim() !== "false";

/** The committed copy without the two header lines the attention copy added. */
async function copy(kernel: BaselineKernel): Promise<string> {
  const { ok: found, text } = await git("show", `${COPIES}:bench/baselines/${kernel}.wgsl`);
  ok(found, `${COPIES}:bench/baselines/${kernel}.wgsl`);
  return text.split("\n").filter((l) => !l.startsWith("// Baseline for bench/")).filter((l) =>
    !l.startsWith("// (shaders/attention.wgsl at 62c4480)")
  ).join("\n");
}

/** Whether `source` is the kept copy of `kernel`: same text, every dispatched entry point. */
async function isKeptCopy(kernel: BaselineKernel, source: string): Promise<boolean> {
  const entries = ENTRIES[kernel].every((e) => new RegExp(`\\bfn ${e}\\(`).test(source));
  return entries && source === await copy(kernel);
}

for (const kernel of Object.keys(BASELINES) as BaselineKernel[]) {
  Deno.test({
    name: `baseline ${kernel}: the pinned commit holds the kept copy`,
    ignore: shallow,
    fn: async () => {
      const b: Baseline = BASELINES[kernel];
      ok(await isKeptCopy(kernel, await readBaseline(b, b.commit)));
      // Where this clone has the tag, it marks the pinned commit.
      const tag = await git("rev-parse", "--verify", "--quiet", `${b.tag}^{commit}`);
      if (tag.ok) strictEqual(tag.text.trim(), b.commit);
    },
  });
}

Deno.test({
  name: "baseline planted error: attention pinned to the matvec commit is not the kept copy",
  ignore: shallow,
  fn: async () => {
    // At that commit shaders/attention.wgsl was the GQA kernel, entry points and all.
    const wrong: Baseline = { ...BASELINES.attention, commit: BASELINES.matvec.commit };
    strictEqual(await isKeptCopy("attention", await readBaseline(wrong, wrong.commit)), false);
  },
});

Deno.test("baseline: a tag the clone lacks is an error naming it and how to make it", async () => {
  const missing: Baseline = { ...BASELINES.matmul, tag: "bench-baselines-absent-in-this-test" };
  await rejects(readBaseline(missing), (e: Error) => {
    ok(e.message.includes("bench-baselines-absent-in-this-test:shaders/matmul.wgsl"), e.message);
    ok(e.message.includes(`git tag bench-baselines-absent-in-this-test ${missing.commit}`));
    return true;
  });
});
