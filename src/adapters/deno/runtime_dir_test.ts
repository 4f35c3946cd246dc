/**
 * `ensureRuntimeDir` in a child process (the variable is the whole process's): unset, it becomes a
 * private directory of the user's; set, it is kept; a link planted at the directory's name is not
 * followed; without write permission nothing changes. (That the tools then print no message
 * about it: `test/server/serve_manners_test.ts`.)
 */
import { notStrictEqual as notEqual, ok, strictEqual as equal } from "node:assert/strict";

const MODULE = new URL("./runtime_dir.ts", import.meta.url).href;

/**
 * Run `code` (after an import of `ensureRuntimeDir`) in a child with `XDG_RUNTIME_DIR` unset and
 * `env` set, with `permissions` (all by default), from a module written to `dir`.
 */
async function run(
  dir: string,
  code: string,
  env: Record<string, string> = {},
  permissions = ["-A"],
) {
  const vars = Deno.env.toObject();
  delete vars.XDG_RUNTIME_DIR;
  const script = `${dir}/probe-${crypto.randomUUID()}.ts`;
  await Deno.writeTextFile(
    script,
    `import { ensureRuntimeDir } from ${JSON.stringify(MODULE)};\n${code}`,
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", ...permissions, script],
    clearEnv: true,
    env: { ...vars, ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(script);
  const stderr = new TextDecoder().decode(out.stderr);
  equal(out.code, 0, stderr);
  return { stdout: new TextDecoder().decode(out.stdout).trim(), stderr };
}

Deno.test("ensureRuntimeDir: unset becomes a private directory; set is kept; links are not used; no permission, no change", async () => {
  const temp = await Deno.makeTempDir({ prefix: "kiln-tmp-" });
  try {
    const show = "const d = ensureRuntimeDir(); console.log(d, Deno.env.get('XDG_RUNTIME_DIR'));";
    const { stdout } = await run(temp, show, { TMPDIR: temp });
    const [dir, set] = stdout.split(" ");
    equal(dir, `${temp}/kiln-runtime-${Deno.uid()}`);
    equal(set, dir);
    const info = await Deno.lstat(dir!);
    ok(info.isDirectory);
    equal(info.uid, Deno.uid());
    equal(info.mode! & 0o777, 0o700);
    // Again: the same directory, made private again if its mode was loosened.
    await Deno.chmod(dir!, 0o755);
    equal((await run(temp, show, { TMPDIR: temp })).stdout, `${dir} ${dir}`);
    equal((await Deno.lstat(dir!)).mode! & 0o777, 0o700);
    // Given: kept as it is.
    equal(
      (await run(temp, show, { XDG_RUNTIME_DIR: "/run/user/4242" })).stdout,
      "/run/user/4242 /run/user/4242",
    );
    // A link planted at the name (to a directory someone else chose): a fresh directory instead.
    await Deno.remove(dir!);
    const elsewhere = await Deno.makeTempDir({ dir: temp });
    await Deno.symlink(elsewhere, dir!);
    const fresh = (await run(temp, show, { TMPDIR: temp })).stdout.split(" ")[0]!;
    notEqual(fresh, dir);
    ok(fresh.startsWith(`${temp}/kiln-runtime-`), fresh);
    equal((await Deno.lstat(fresh)).mode! & 0o777, 0o700);
    // Without write permission: nothing set, no prompt, no error.
    const limited = await run(temp, show, { TMPDIR: temp }, ["--allow-env", "--allow-read"]);
    equal(limited.stdout, "undefined undefined");
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
});
