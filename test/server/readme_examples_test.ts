/**
 * The README's examples run as written against `serve` as a newcomer starts it (no `--model`: the
 * embedded fortune model with its own chat template): each `curl` command of its shell blocks, and
 * each JavaScript block (the `openai` client: a chat with a tool, the Responses API with a JSON
 * schema), with only the server's address replaced by the test's free port. A block that throws,
 * a curl that fails or an answer that is not the JSON its route returns fails the test.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { codeBlocks, shellCommands } from "../support/markdown.ts";
import { startServer } from "./server.ts";

const ROOT = new URL("../../", import.meta.url);
const README = Deno.readTextFileSync(new URL("README.md", ROOT));
const BLOCKS = codeBlocks(README);
/** The address the README's examples use. */
const README_BASE = "http://127.0.0.1:8080";

/** Runs a command line with `sh -c` (the README's shell), its output as text. */
async function sh(cmd: string): Promise<{ code: number; out: string; err: string }> {
  const r = await new Deno.Command("sh", { args: ["-c", cmd], stdout: "piped", stderr: "piped" })
    .output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: r.code, out: text(r.stdout), err: text(r.stderr) };
}

Deno.test("the README's curl and JavaScript examples run against the default serve", async () => {
  const curls = shellCommands(BLOCKS).filter((c) => c.startsWith("curl "));
  const scripts = BLOCKS.filter((b) => b.lang === "js" && b.text.includes(README_BASE));
  ok(curls.length >= 1 && scripts.length >= 1, "the README has a curl and a client example");
  const server = await startServer([], "default");
  const base = server.url.replace(/\/$/, "");
  const dir = new URL(".cache/readme/", ROOT);
  Deno.mkdirSync(dir, { recursive: true });
  try {
    for (const curl of curls) {
      const r = await sh(curl.replaceAll(README_BASE, base));
      equal(r.code, 0, `${curl}\n${r.err}`);
      const body = JSON.parse(r.out);
      ok(body.choices?.[0]?.message, `${curl} answered ${r.out}`);
      equal(body.model, "fortune");
    }
    for (const [i, block] of scripts.entries()) {
      // Inside the repository, so `openai` resolves from its node_modules as it would in an app.
      const file = new URL(`example_${i}.mjs`, dir);
      Deno.writeTextFileSync(file, block.text.replaceAll(README_BASE, base));
      const r = await sh(`"${Deno.execPath()}" run -A "${file.pathname}"`);
      equal(r.code, 0, `README example ${i} failed:\n${r.err}\n${server.log().slice(-2000)}`);
      ok(r.out.trim().length > 0, `README example ${i} printed nothing`);
    }
  } finally {
    await server.stop();
    Deno.removeSync(dir, { recursive: true });
  }
});
