import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { describeReport, quantizeToFile } from "./quantize.ts";

const invalid = (needle: string) => (e: unknown) =>
  e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(needle);

Deno.test("quantizeToFile writes the file it reports, and leaves nothing behind on failure", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const model = new URL("../../../test/fixtures/models/llama-gqa-f32", import.meta.url).pathname;
    const out = `${dir}/m.gguf`;
    const report = await quantizeToFile(model, out, "q8_0");
    equal((await Deno.stat(out)).size, report.bytes);
    deepStrictEqual(report.types, { F32: 5, Q8_0: 16 });
    const lines = describeReport(out, report);
    ok(lines[1]!.includes("Q8_0: 16"), lines[1]!);
    ok(/8\.\d{3} bits per weight/.test(lines[2]!), lines[2]!);
    await rejects(quantizeToFile(`${dir}/none`, `${dir}/x.gguf`, "q8_0"), invalid("config.json"));
    deepStrictEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["m.gguf"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
