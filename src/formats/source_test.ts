import { strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { ggufEntry, modelName } from "./source.ts";
import { urlFiles } from "./url_source.ts";

Deno.test("modelName: the last segment of a directory or URL, skipping resolve/main", () => {
  equal(modelName("models/fortune/"), "fortune");
  equal(modelName("/abs/path/SmolLM2-135M"), "SmolLM2-135M");
  equal(modelName("https://huggingface.co/Org/Name/resolve/main/"), "Name");
  equal(modelName("http://127.0.0.1:8000/m/"), "m");
  equal(modelName("https://example.com/"), "model");
});

Deno.test("modelName: a GGUF file's name without extension or split suffix", () => {
  equal(modelName("/m/SmolLM2-135M-Q4_K_M.gguf"), "SmolLM2-135M-Q4_K_M");
  equal(modelName("https://h.co/O/R/resolve/main/big-00001-of-00003.gguf"), "big");
});

Deno.test("ggufEntry: the single .gguf or the first split; ambiguity is InvalidArgument", () => {
  equal(ggufEntry(["config.json", "tokenizer.json"]), undefined);
  equal(ggufEntry(["a.gguf", "README.md"]), "a.gguf");
  equal(ggufEntry(["m-00002-of-00002.gguf", "m-00001-of-00002.gguf"]), "m-00001-of-00002.gguf");
  throws(() => ggufEntry(["a.gguf", "b.gguf"]), (e: unknown) => {
    return e instanceof EngineError && e.type === "InvalidArgument" &&
      /2 .gguf files/.test(e.message);
  });
});

Deno.test("urlFiles: a URL ending in .gguf is a GGUF model opened by URL", () => {
  const files = urlFiles("https://example.com/m/model-Q8_0.gguf");
  equal(files.gguf, "https://example.com/m/model-Q8_0.gguf");
  equal(urlFiles("https://example.com/m/").gguf, undefined);
});
