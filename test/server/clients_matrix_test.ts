/**
 * The three clients people use, each feature called as its docs show it, against `serve` with the
 * embedded default (no `--model`: fortune and its own chat template) and with a chat-template
 * model (fortune's weights under Qwen3's template), both on the real engine; and reasoning output
 * (`reasoning_content`) from an engine whose reply the test writes in Qwen3's `<think>` form, since
 * fortune never thinks. Every cell must pass; a feature a client has no call for is `n/a`. The
 * table is printed (and written to `test/artifacts/clients_matrix.md`).
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import OpenAI from "openai";
import { generateText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatOpenAI } from "@langchain/openai";
import { specFiles } from "../../src/adapters/deno/file_source.ts";
import { ChatTemplate } from "../../src/text/chat.ts";
import { loadText } from "../../src/text/load.ts";
import { CELLS, CLIENT_NAMES, type ClientName, type Target } from "../support/client_cells.ts";
import { ScriptedEngine } from "../support/scripted_engine.ts";
import { testServer } from "../support/server.ts";
import { startServer } from "./server.ts";

const ROOT = new URL("../../", import.meta.url);
const FORTUNE = new URL("models/fortune/", ROOT).pathname;
const QWEN3 = new URL("test/fixtures/chat_templates/Qwen-Qwen3-0.6B.jinja", ROOT).pathname;

const THOUGHT = "The stars say rain.";
const ANSWER = "Take an umbrella.";

/** Reasoning through each client: the thought apart from the answer. */
const REASONING: Record<ClientName, (t: Target) => Promise<string>> = {
  openai: async (t) => {
    const client = new OpenAI({ baseURL: t.baseURL, apiKey: "x", maxRetries: 0 });
    const r = await client.chat.completions.create({
      model: t.model,
      messages: [{ role: "user", content: "Weather?" }],
    });
    const m = r.choices[0]!.message as { content: string | null; reasoning_content?: string };
    equal(m.reasoning_content?.trim(), THOUGHT);
    equal(m.content?.trim(), ANSWER);
    return "reasoning_content";
  },
  "ai-sdk": async (t) => {
    const provider = createOpenAICompatible({ name: "kiln", baseURL: t.baseURL, apiKey: "x" });
    const r = await generateText({ model: provider(t.model), prompt: "Weather?", maxRetries: 0 });
    equal(r.reasoningText?.trim(), THOUGHT);
    equal(r.text.trim(), ANSWER);
    return "reasoningText";
  },
  langchain: async (t) => {
    const m = new ChatOpenAI({
      model: t.model,
      apiKey: "x",
      configuration: { baseURL: t.baseURL },
      maxRetries: 0,
    });
    const r = await m.invoke("Weather?");
    equal(String(r.additional_kwargs.reasoning_content).trim(), THOUGHT);
    equal(String(r.content).trim(), ANSWER);
    return "additional_kwargs.reasoning_content";
  },
};

/** Runs every cell against a target: `ok: note`, `n/a`, or `FAIL: message`. */
async function runCells(t: Target): Promise<Record<string, Record<ClientName, string>>> {
  const rows: Record<string, Record<ClientName, string>> = {};
  for (const feature of Object.keys(CELLS.openai)) {
    const row = rows[feature] = {} as Record<ClientName, string>;
    for (const client of CLIENT_NAMES) {
      const cell = CELLS[client][feature];
      if (!cell) {
        row[client] = "n/a";
        continue;
      }
      try {
        row[client] = `ok: ${await cell(t)}`;
      } catch (e) {
        row[client] = `FAIL: ${e instanceof Error ? e.message.split("\n")[0] : e}`;
      }
    }
  }
  return rows;
}

/** A chat-template model: fortune's weights and tokenizer under Qwen3's template. */
async function qwenTemplated(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "kiln-qwen3-template-" });
  for (const f of ["config.json", "model.safetensors", "tokenizer.json"]) {
    await Deno.copyFile(`${FORTUNE}${f}`, `${dir}/${f}`);
  }
  const template = await Deno.readTextFile(QWEN3);
  await Deno.writeTextFile(
    `${dir}/tokenizer_config.json`,
    JSON.stringify({ chat_template: template }),
  );
  return dir;
}

/** The reasoning row, against a scripted engine under Qwen3's template. */
async function reasoningRow(): Promise<Record<ClientName, string>> {
  const fortune = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
  const text = {
    tokenizer: fortune.tokenizer,
    chat: new ChatTemplate(Deno.readTextFileSync(QWEN3)),
  };
  const engine = new ScriptedEngine("thinker", text.tokenizer, {
    script: () => `<think>\n${THOUGHT}\n</think>\n\n${ANSWER}`,
  });
  const server = testServer(engine);
  server.ready(await engine.start(1n), text);
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, server.fetch);
  const t = { baseURL: `http://127.0.0.1:${http.addr.port}/v1`, model: "thinker" };
  const row = {} as Record<ClientName, string>;
  try {
    for (const client of CLIENT_NAMES) {
      try {
        row[client] = `ok: ${await REASONING[client](t)}`;
      } catch (e) {
        row[client] = `FAIL: ${e instanceof Error ? e.message.split("\n")[0] : e}`;
      }
    }
  } finally {
    await http.shutdown();
  }
  return row;
}

/** The table as Markdown: one row per feature, a column per client and server. */
function table(results: Record<string, Record<string, Record<ClientName, string>>>): string {
  const servers = Object.keys(results);
  const features = Object.keys(results[servers[0]!]!);
  const head = servers.flatMap((s) => CLIENT_NAMES.map((c) => `${c} (${s})`));
  const lines = [`| feature | ${head.join(" | ")} |`, `|---|${head.map(() => "---").join("|")}|`];
  for (const f of features) {
    const cells = servers.flatMap((s) => CLIENT_NAMES.map((c) => results[s]![f]?.[c] ?? ""));
    lines.push(`| ${f} | ${cells.map((c) => c.replaceAll("|", "/")).join(" | ")} |`);
  }
  return lines.join("\n") + "\n";
}

Deno.test({
  name: "openai, AI SDK and LangChain: every feature against the default and a templated model",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const results: Record<string, Record<string, Record<ClientName, string>>> = {};
    const dir = await qwenTemplated();
    for (
      const [name, start] of [
        ["default", () => startServer([], "default")],
        ["qwen3 template", () => startServer(["--model", dir])],
      ] as const
    ) {
      const server = await start();
      try {
        results[name] = await runCells({
          baseURL: `${server.url.replace(/\/$/, "")}/v1`,
          model: "fortune",
        });
      } finally {
        await server.stop();
      }
    }
    await Deno.remove(dir, { recursive: true });
    results.default!.reasoning = await reasoningRow();
    const md = table(results);
    console.log(md);
    await Deno.mkdir(new URL("test/artifacts/", ROOT), { recursive: true });
    await Deno.writeTextFile(new URL("test/artifacts/clients_matrix.md", ROOT), md);
    const failed = Object.entries(results).flatMap(([s, rows]) =>
      Object.entries(rows).flatMap(([f, row]) =>
        CLIENT_NAMES.filter((c) => row[c]?.startsWith("FAIL")).map((c) =>
          `${s} ${f} ${c}: ${row[c]}`
        )
      )
    );
    deepStrictEqual(failed, []);
    ok(Object.keys(results.default!).length >= 18);
  },
});
