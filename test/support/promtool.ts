/** Runs `promtool check metrics` on exposition text (Debian package `prometheus`). */
export async function promtoolCheck(text: string): Promise<{ ok: boolean; output: string }> {
  const child = new Deno.Command("promtool", {
    args: ["check", "metrics"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const { code, stdout, stderr } = await child.output();
  const dec = new TextDecoder();
  return { ok: code === 0, output: dec.decode(stdout) + dec.decode(stderr) };
}
