/**
 * `KILN_KERNEL_PATHS` end to end: `deno task verify` on a reference model, with each kind of
 * kernel paths, passes and says which paths its device took.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { PATH_KINDS } from "../../gpu/paths.ts";
import { MODELS } from "../../../test/support/models.ts";

const VERIFY = new URL("./verify.ts", import.meta.url).pathname;
const MODEL = MODELS.find((m) => m.name === "llama-mqa-bf16")!.dir.pathname;

for (const kind of PATH_KINDS) {
  Deno.test(`KILN_KERNEL_PATHS=${kind}: verify takes ${kind} kernel paths and passes`, async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", VERIFY, "--model", MODEL],
      env: { KILN_KERNEL_PATHS: kind },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    const stdout = dec.decode(out.stdout), stderr = dec.decode(out.stderr);
    equal(out.code, 0, `${stdout}\n${stderr}`);
    ok(stdout.trimEnd().endsWith("verify: PASS"), stdout);
    ok(stderr.includes(`; ${kind} kernel paths;`), stderr);
  });
}
