/**
 * Kiln from its npm package under Deno: load a checkpoint folder's files into Kiln's worker and
 * stream an OpenAI-shaped completion to stdout, then print the request counter.
 *
 *   npm install ../../kiln-kiln-0.1.0.tgz   # or a published version
 *   deno run -A complete.ts node_modules/@kiln/kiln/models/fortune "You will"
 */
import { EngineError, openModel } from "@kiln/kiln";

// Two optional arguments and no flags (this example keeps to the package's own imports: no
// argument parser): anything else is refused.
if (Deno.args.length > 2 || Deno.args.some((a) => a.startsWith("-"))) {
  console.error("usage: deno run -A complete.ts [DIR] [PROMPT]");
  Deno.exit(2);
}
const [dir = "node_modules/@kiln/kiln/models/fortune", prompt = "You will"] = Deno.args;
const names = ["config.json", "tokenizer.json", "model.safetensors"];
const files = await Promise.all(
  names.map(async (n) => new File([await Deno.readFile(`${dir}/${n}`)], n)),
);

const model = await openModel({ model: files, name: "fortune" });
try {
  const stream = await model.completions.create({
    prompt,
    max_tokens: 32,
    seed: 7,
    stream: true,
  });
  const out = new TextEncoder();
  await Deno.stdout.write(out.encode(prompt));
  let finish: string | null = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    await Deno.stdout.write(out.encode(choice?.text ?? ""));
    finish = choice?.finish_reason ?? finish;
  }
  console.log(`\nfinish: ${finish}`);
  const counter = model.metricsText().split("\n").filter((l) =>
    l.startsWith("dynamo_frontend_requests_total")
  );
  console.log(counter.join("\n"));
} catch (e) {
  console.error(e instanceof EngineError ? `${e.type}: ${e.message}` : e);
  Deno.exitCode = 1;
} finally {
  await model.close();
}
