/**
 * Runs `promtool check metrics` on exposition text (Debian package `prometheus`). A parse error
 * always fails; lint problems fail too, except the one promtool reports for every `vllm:` name:
 * colons are meant for recording rules, but `vllm:num_requests_waiting` and its kin are the names
 * vLLM exports and routers scrape (`metrics/router_gauges.ts`), so Kiln keeps them.
 */
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
  const output = dec.decode(stdout) + dec.decode(stderr);
  // promtool exits 3 for lint problems alone, 1 when the text does not parse.
  const accepted = (line: string) => /^vllm:\S+ metric names should not contain ':'$/.test(line);
  const lintOnly = code === 3 && output.split("\n").filter((l) => l.trim()).every(accepted);
  return { ok: code === 0 || lintOnly, output };
}
