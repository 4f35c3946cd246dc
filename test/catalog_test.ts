/**
 * `models/catalog.json`, the chat models the demo offers by URL: its entries are GGUF files on
 * the Hugging Face Hub (`resolve/main/` URLs, sizes, quantization, SHA-256), the five the demo
 * names; and each loads through the model store the way a page's or serve's does, from a local
 * server standing in for the Hub (the catalog's `https://huggingface.co/` replaced by its base),
 * with fortune's GGUF at every entry's path: downloaded once by Range requests, listed with its
 * size, its chat template read from the file, and a second load asking the server nothing.
 */
import { deepStrictEqual, match, ok, strictEqual as equal } from "node:assert/strict";
import { dirStorage } from "../src/adapters/deno/dir_storage.ts";
import { openGgufFiles } from "../src/model/gguf/load.ts";
import { detectConvention, TOOL_CALL_CONVENTIONS } from "../src/openai/tool_calls.ts";
import { ModelStore } from "../src/store/store.ts";
import { loadText } from "../src/text/load.ts";
import { fortuneGguf } from "./support/fortune_gguf.ts";
import { rangeServer } from "./support/range_server.ts";

interface Entry {
  name: string;
  family: string;
  url: string;
  quant: string;
  bytes: number;
  sha256: string;
  revision: string;
  licence: string;
}
const CATALOG = JSON.parse(
  await Deno.readTextFile(new URL("../models/catalog.json", import.meta.url)),
) as { about: string; checked: string; unverified: string; models: Entry[] };
const HUB = "https://huggingface.co/";

Deno.test("the catalog: five chat models, each one GGUF file on the Hub with its size", () => {
  deepStrictEqual(CATALOG.models.map((m) => m.name), [
    "Qwen3-0.6B",
    "SmolLM2-360M-Instruct",
    "Llama-3.2-1B-Instruct",
    "Gemma-3-1B-it",
    "Phi-4-mini-instruct",
  ]);
  for (const m of CATALOG.models) {
    const url = /^https:\/\/huggingface\.co\/[\w.-]+\/[\w.-]+\/resolve\/main\/([\w.-]+\.gguf)$/
      .exec(m.url);
    ok(url, `${m.name}: ${m.url} is not a resolve/main GGUF URL`);
    ok(url[1]!.toUpperCase().includes(m.quant.toUpperCase()), `${m.name}: ${m.quant} in the name`);
    ok(Number.isSafeInteger(m.bytes) && m.bytes > 1e8, `${m.name}: bytes ${m.bytes}`);
    match(m.sha256, /^[0-9a-f]{64}$/);
    match(m.revision, /^[0-9a-f]{40}$/);
    ok(["qwen3", "llama", "gemma3", "phi3"].includes(m.family), `${m.name}: ${m.family}`);
  }
  for (const note of [CATALOG.about, CATALOG.checked, CATALOG.unverified]) ok(note.length > 40);
});

Deno.test("every catalog entry loads through the model store from a local stand-in for the Hub", async () => {
  const bytes = await fortuneGguf();
  const hub = await Deno.makeTempDir();
  const cache = await Deno.makeTempDir();
  for (const m of CATALOG.models) {
    const path = `${hub}/${m.url.slice(HUB.length)}`;
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    await Deno.writeFile(path, bytes);
  }
  const server = rangeServer(`${hub}/`, { etag: "sha256", linkedSha: true });
  const local = (m: Entry) => m.url.replace(HUB, server.base);
  try {
    for (const m of CATALOG.models) {
      const files = new ModelStore(dirStorage(cache)).files(local(m));
      equal(files.gguf, local(m), `${m.name}: opened as one GGUF file`);
      await files.prepare!([files.gguf!]);
      const gguf = await openGgufFiles(files);
      equal(gguf.config.arch, "llama", m.name);
      const text = await loadText(files);
      equal(
        detectConvention(text.chat.source),
        TOOL_CALL_CONVENTIONS.get("<tool_call>"),
        `${m.name}: the file's chat template`,
      );
    }
    const listed = await new ModelStore(dirStorage(cache)).list();
    deepStrictEqual(
      listed.map((l) => l.base).sort(),
      CATALOG.models.map(local).sort(),
      "one stored model per entry",
    );
    for (const l of listed) {
      deepStrictEqual(l.files.map((f) => [f.size, f.loaded, f.complete]), [[
        bytes.length,
        bytes.length,
        true,
      ]]);
    }
    const gets = server.served.filter((s) => s.method === "GET");
    ok(gets.every((s) => s.range !== null), "read by Range requests");
    equal(
      gets.reduce((n, s) => n + s.bytes, 0),
      CATALOG.models.length * bytes.length,
      "each file downloaded once",
    );
    // A second load is read from the store: no request at all.
    const before = server.served.length;
    for (const m of CATALOG.models) {
      await loadText(new ModelStore(dirStorage(cache)).files(local(m)));
    }
    equal(server.served.length, before, "no request on the second load");
  } finally {
    await server.shutdown();
    await Deno.remove(hub, { recursive: true });
    await Deno.remove(cache, { recursive: true });
  }
});
