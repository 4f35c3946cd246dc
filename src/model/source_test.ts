import { equal } from "node:assert/strict";
import { modelName } from "./source.ts";

Deno.test("modelName: the last segment of a directory or URL, skipping resolve/main", () => {
  equal(modelName("models/fortune/"), "fortune");
  equal(modelName("/abs/path/SmolLM2-135M"), "SmolLM2-135M");
  equal(modelName("https://huggingface.co/Org/Name/resolve/main/"), "Name");
  equal(modelName("http://127.0.0.1:8000/m/"), "m");
  equal(modelName("https://example.com/"), "model");
});
