/**
 * The model-family fixtures (`test/fixtures/families/`, README there) as browser pages fetch them
 * from the Vite server: the family list, and per family its manifest, llama.cpp's teacher-forced
 * logits as a `Reference` and its F32 GGUF as a `File` (what the demo's file picker hands over).
 */
import { logitsManifestReference } from "../../../src/reference/file.ts";
import type { Reference } from "../../../src/reference/verify.ts";

export const FAMILY_ROOT = "/test/fixtures/families/";

/** The families of `index.json`. */
export const FAMILIES = ((await (await fetch(`${FAMILY_ROOT}index.json`)).json()) as {
  families: string[];
}).families;

export async function bytes(url: string): Promise<Uint8Array> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

/** One family's fixture on the page. */
export interface PageFixture {
  /** The fixture's folder URL path (ends with `/`). */
  dir: string;
  /** The 50 token ids llama.cpp ran. */
  tokens: number[];
  /** llama.cpp's logits: `prompts[0].logits[p]` follows `tokens[0..p]`. */
  reference: Reference;
  /** The F32 GGUF llama.cpp ran, as a `File` named `<family>.gguf`. */
  gguf(): Promise<File>;
}

export async function pageFixture(family: string): Promise<PageFixture> {
  const dir = `${FAMILY_ROOT}${family}/`;
  const manifest = await (await fetch(`${dir}manifest.json`)).json();
  const reference = logitsManifestReference(manifest, await bytes(`${dir}${manifest.logits.file}`));
  return {
    dir,
    tokens: manifest.tokens,
    reference,
    gguf: async () => new File([await bytes(`${dir}model.gguf`)] as BlobPart[], `${family}.gguf`),
  };
}
