/**
 * The embedded fortune model as a Q8_0 GGUF file, converted in memory by Kiln's own converter:
 * its chat template (`models/fortune/tokenizer_config.json`) is the file's
 * `tokenizer.chat_template`, so a server reading only the file can chat as the folder does.
 */
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../src/convert/convert.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;

/** fortune's weights as Q8_0 GGUF bytes (about 5.1 MB), `general.name` `fortune`. */
export async function fortuneGguf(): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  await writeHfAsGguf(
    await readHfCheckpoint(dirFiles(FORTUNE)),
    (b) => parts.push(b.slice()),
    { mix: "q8_0", name: "fortune" },
  );
  return new Uint8Array(await new Blob(parts as Uint8Array<ArrayBuffer>[]).arrayBuffer());
}
