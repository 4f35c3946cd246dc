/** The reference models the tests run: three HF fixtures and the embedded fortune model. */
export const MODELS = [
  { name: "llama-gqa-f32", dir: new URL("../fixtures/models/llama-gqa-f32/", import.meta.url) },
  {
    name: "qwen2-bias-tied-f16",
    dir: new URL("../fixtures/models/qwen2-bias-tied-f16/", import.meta.url),
  },
  { name: "llama-mqa-bf16", dir: new URL("../fixtures/models/llama-mqa-bf16/", import.meta.url) },
  { name: "fortune", dir: new URL("../../models/fortune/", import.meta.url) },
] as const;
