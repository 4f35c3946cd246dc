/**
 * A token's own bytes, for logprobs: a byte token that is only part of a UTF-8 character
 * decodes to U+FFFD on its own, so its text cannot tell it from another such token.
 */

/**
 * The byte-level BPE alphabet (GPT-2's): printable Latin-1 bytes stand for themselves, and the
 * other 68 bytes, in order, for the code points from U+0100 up. Returns code point → byte.
 */
function byteLevelAlphabet(): Map<number, number> {
  const printable = (b: number) =>
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const map = new Map<number, number>();
  let next = 0x100;
  for (let b = 0; b < 256; b++) map.set(printable(b) ? b : next++, b);
  return map;
}

let alphabet: Map<number, number> | undefined;

/**
 * The bytes a vocabulary piece stands for: a byte-fallback piece `<0xNN>`, or (with
 * `byteLevel`) a byte-level BPE piece; undefined when the piece is neither.
 */
export function pieceBytes(piece: string, byteLevel: boolean): Uint8Array | undefined {
  const fallback = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
  if (fallback) return Uint8Array.of(parseInt(fallback[1]!, 16));
  if (!byteLevel) return undefined;
  alphabet ??= byteLevelAlphabet();
  const out: number[] = [];
  for (const ch of piece) {
    const b = alphabet.get(ch.codePointAt(0)!);
    if (b === undefined) return undefined;
    out.push(b);
  }
  return Uint8Array.from(out);
}

/** Whether a `tokenizer.json` decoder (possibly a `Sequence`) decodes byte-level BPE. */
export function isByteLevelDecoder(decoder: unknown): boolean {
  if (typeof decoder !== "object" || decoder === null) return false;
  const d = decoder as { type?: unknown; decoders?: unknown };
  if (d.type === "ByteLevel") return true;
  return d.type === "Sequence" && Array.isArray(d.decoders) && d.decoders.some(isByteLevelDecoder);
}

/**
 * How OpenAI's completions API names a token in `tokens` and `top_logprobs`: its text, or
 * `bytes:\xNN...` when the text alone is not the token (a part of a UTF-8 character).
 */
export function tokenLabel(text: string, bytes: Uint8Array): string {
  if (!text.includes("\uFFFD")) return text;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return text; // a real U+FFFD
  } catch {
    return "bytes:" + [...bytes].map((b) => `\\x${b.toString(16).padStart(2, "0")}`).join("");
  }
}
