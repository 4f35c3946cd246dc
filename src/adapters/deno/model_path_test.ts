/**
 * The `--model` check the Deno tools make before loading: a path that does not exist is named in
 * one line (relative ones with the folder they were looked for in); one that exists, or a URL, is
 * left to the loader.
 */
import { strictEqual as equal } from "node:assert/strict";
import { isModelUrl, missingModelPath } from "./model_path.ts";

Deno.test("missingModelPath: names a path that does not exist; leaves what exists and URLs", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kiln-model-path-" });
  try {
    await Deno.writeTextFile(`${dir}/m.gguf`, "");
    equal(missingModelPath(dir), undefined, "a folder, with or without a model in it");
    equal(missingModelPath(`${dir}/m.gguf`), undefined);
    equal(missingModelPath(`${dir}/modls/fortune`), `--model ${dir}/modls/fortune does not exist`);
    equal(
      missingModelPath("./modls/fortune", "--model", () => "/home/k"),
      "--model ./modls/fortune does not exist (relative to /home/k)",
    );
    equal(
      missingModelPath(`${dir}/d.gguf`, "--speculative-config model"),
      `--speculative-config model ${dir}/d.gguf does not exist`,
    );
    for (const url of ["https://hf.co/x/resolve/main/", "http://127.0.0.1:1/m.gguf"]) {
      equal(isModelUrl(url), true);
      equal(missingModelPath(url), undefined, url);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
