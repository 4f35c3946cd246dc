/**
 * The JSR gate: `deno publish --dry-run` (no slow types, every import resolvable once published)
 * and `deno doc --lint` over every entry point `deno.json` exports (every exported symbol has
 * JSDoc and explicit types). Entry points are read from `deno.json`, so a new export is checked
 * without editing this script. Used by `deno task check` and the gate of `test/run.ts`.
 */
const root = new URL("../", import.meta.url);
const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))) as {
  exports?: Record<string, string>;
};
const entries = Object.values(config.exports ?? {});
if (entries.length === 0) {
  console.error("jsr: deno.json has no exports");
  Deno.exit(1);
}

async function run(label: string, args: string[]): Promise<boolean> {
  console.log(`jsr (${label}): deno ${args.join(" ")}`);
  const { success } = await new Deno.Command(Deno.execPath(), { args, cwd: root }).spawn().status;
  return success;
}

// --allow-dirty: the gate runs on working trees with uncommitted changes too.
const ok = (await run("publish", ["publish", "--dry-run", "--allow-dirty", "--quiet"])) &&
  (await run("doc", ["doc", "--lint", ...entries]));
Deno.exit(ok ? 0 : 1);
