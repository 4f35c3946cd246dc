/**
 * `deno task serve --engine ort`: onnxruntime-web on the fortune model's ONNX export (f32, the
 * WebGPU EP on the adapter Deno finds) behind the same server, answering a chat request and a
 * seeded completion through the official `openai` client.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import OpenAI from "openai";
import { onnxFortune } from "../support/onnx_fortune.ts";
import { startServer } from "./server.ts";

Deno.test("serve --engine ort answers chat and completions on the ONNX export", async () => {
  const dir = await onnxFortune();
  const server = await startServer(["--engine", "ort", "--variant", "model"], {
    dir,
    files: ["config.json", "tokenizer.json", "onnx/model.onnx"],
  });
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "none", maxRetries: 0 });
    const chat = await client.chat.completions.create({
      model: "fortune",
      messages: [{ role: "user", content: "Tell me a fortune" }],
      max_tokens: 8,
      temperature: 0,
    });
    const text = chat.choices[0]!.message.content ?? "";
    ok(text.length > 0, "some text");
    const used = chat.usage?.completion_tokens ?? 0;
    ok(used > 0 && used <= 8, `completion tokens ${used}`);
    const req = { model: "fortune", prompt: "You will", max_tokens: 6, seed: 3, temperature: 0.8 };
    const [a, b] = [
      await client.completions.create(req),
      await client.completions.create(req),
    ];
    equal(a.choices[0]!.text, b.choices[0]!.text, "same seed, same text");
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const success =
      'dynamo_frontend_requests_total{model="fortune",status="success",error_type=""}';
    ok(metrics.includes(`${success} 3`), metrics.slice(0, 2000));
  } finally {
    const { code, stderr } = await server.stop();
    equal(code, 0, stderr);
  }
});
