import { deepStrictEqual, equal } from "node:assert/strict";
import { sha256 } from "./sha256.ts";

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const webCrypto = async (b: Uint8Array) =>
  new Uint8Array(await crypto.subtle.digest("SHA-256", b as Uint8Array<ArrayBuffer>));

Deno.test("sha256 gives FIPS 180-2's example digests", () => {
  const text = (s: string) => hex(sha256(new TextEncoder().encode(s)));
  equal(text("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  equal(
    text("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
  equal(text(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
});

Deno.test("sha256 agrees with WebCrypto on every length from 0 to 300 bytes and on a long input", async () => {
  // Every padding case (length mod 64 on both sides of 55/56) with random contents.
  for (let n = 0; n <= 300; n++) {
    const data = crypto.getRandomValues(new Uint8Array(n));
    deepStrictEqual(sha256(data), await webCrypto(data), `${n} bytes`);
  }
  const long = new Uint8Array(1 << 20).map((_, i) => (i * 31 + (i >> 8)) & 0xff);
  deepStrictEqual(sha256(long), await webCrypto(long));
});
