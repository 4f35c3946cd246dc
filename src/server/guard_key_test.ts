/**
 * The API key check (`keyMatches`, `digestsEqual`): 5,000 random wrong keys, keys one byte off at
 * either end, one character longer or shorter, empty, 1 MB long, non-ASCII and not bytes, all
 * refused, and the right key (ASCII or UTF-8) accepted, in-process and through the server over
 * real sockets. Constant time is checked by structure, not by the clock: the compare reads every
 * byte of both fixed-length digests whatever they hold, and `keyMatches` hands it 32-byte digests
 * for every input. Planted errors kept as tests: a compare of 1 of the 32 digest bytes, and one
 * that stops at the first difference, each rejected by the check that guards against it.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { DIGEST_BYTES, type DigestCompare, digestsEqual, keyMatches } from "./guard.ts";
import { mockServer } from "../../test/support/server.ts";
import { rawRequest } from "../adapters/deno/raw_http.ts";

const KEY = "sk-kiln-3f9a1c7e5b2d4068";
/** A non-ASCII key: Cyrillic, an accent and an emoji (its UTF-8 bytes go over the wire). */
const UTF8_KEY = "ключ-é-🔑";
/** `s`'s UTF-8 bytes as Deno hands a header's bytes to a handler: one character per byte. */
const asHeader = (s: string) => String.fromCharCode(...new TextEncoder().encode(s));

/** A seeded generator (mulberry32), so a failing key can be reproduced. */
function random(seed: number): () => number {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r ^= r + Math.imul(r ^ (r >>> 7), 61 | r);
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` random header values (printable ASCII and Latin-1 bytes, 0 to 80 long), none `KEY`. */
function randomKeys(count: number, seed: number): string[] {
  const next = random(seed);
  const keys: string[] = [];
  while (keys.length < count) {
    const length = Math.floor(next() * 81);
    const codes = Array.from({ length }, () => {
      const c = 0x20 + Math.floor(next() * 0xe0);
      return c === 0x7f ? 0x41 : c;
    });
    const k = String.fromCharCode(...codes).trim();
    if (k !== KEY) keys.push(k);
  }
  return keys;
}

/** The wrong keys of `keys` that `keyMatches` lets in with `equal` as its digest compare. */
async function letIn(keys: string[], equal?: DigestCompare): Promise<string[]> {
  const got = await Promise.all(keys.map((k) => keyMatches(`Bearer ${k}`, KEY, equal)));
  return keys.filter((_, i) => got[i]);
}

/** Planted error: only the first of the 32 digest bytes compared (1 in 256 wrong keys get in). */
const oneByteOf32: DigestCompare = (a, b) => a[0] === b[0];

/** Planted error: stops at the first differing byte (time tells where keys first differ). */
const earlyExit: DigestCompare = (a, b) => {
  for (let i = 0; i < DIGEST_BYTES; i++) if (a[i] !== b[i]) return false;
  return true;
};

Deno.test("API key: 5,000 random wrong keys refused, the right one accepted", async () => {
  const keys = randomKeys(5000, 39);
  deepStrictEqual(await letIn(keys), []);
  ok(await keyMatches(`Bearer ${KEY}`, KEY));
});

Deno.test("planted error: a compare of 1 of 32 digest bytes lets random wrong keys in", async () => {
  const keys = randomKeys(5000, 39);
  // About 5000 / 256 ≈ 20 expected; none getting in has probability (255/256)^5000 ≈ 3e-9.
  const inside = await letIn(keys, oneByteOf32);
  ok(inside.length > 0, "the random-key check must reject the 1-byte compare");
  ok(await keyMatches(`Bearer ${KEY}`, KEY, oneByteOf32), "it still lets the right key in");
});

/** Values of `Authorization` that must not match `key`. */
function nearMisses(key: string): string[] {
  const chars = [...key];
  const bump = (c: string) => String.fromCodePoint(c.codePointAt(0)! ^ 1);
  const first = bump(chars[0]!) + chars.slice(1).join("");
  const last = chars.slice(0, -1).join("") + bump(chars.at(-1)!);
  return [
    `Bearer ${first}`,
    `Bearer ${last}`,
    `Bearer ${key}x`,
    `Bearer x${key}`,
    `Bearer ${chars.slice(0, -1).join("")}`,
    `Bearer ${chars.slice(1).join("")}`,
    `Bearer ${key.toUpperCase() === key ? key.toLowerCase() : key.toUpperCase()}`,
    `Bearer ${key} `,
    `Bearer  ${key}x`,
    `Bearer ${key}\t`,
    `Bearer`,
    `Bearer `,
    "",
    key,
    `Basic ${key}`,
    `Token ${key}`,
    `Bearer${key}`,
    `Bearer ${key.repeat(2)}`,
    `Bearer ${"x".repeat(1 << 20)}`,
    `Bearer ${key}${"\0".repeat(32)}`,
  ];
}

Deno.test("API key: one byte off at either end, longer, shorter, empty, other schemes refused", async () => {
  for (const key of [KEY, "k", "\u00ff\u00e9"]) {
    for (const value of nearMisses(key)) {
      const shown = value.length > 60 ? `${value.slice(0, 60)}… (${value.length})` : value;
      strictEqual(await keyMatches(value, key), false, `${JSON.stringify(shown)} vs ${key}`);
    }
  }
  strictEqual(await keyMatches(null, KEY), false);
  // The scheme is case-insensitive (RFC 9110 §11.1); spaces after it are allowed.
  for (const value of [`Bearer ${KEY}`, `bearer ${KEY}`, `BEARER   ${KEY}`]) {
    strictEqual(await keyMatches(value, KEY), true, value);
  }
});

Deno.test("API key: a UTF-8 key matches as its bytes; text that is not bytes never matches", async () => {
  strictEqual(await keyMatches(`Bearer ${asHeader(UTF8_KEY)}`, UTF8_KEY), true);
  // The key's characters themselves cannot come from the wire (past 0xFF): refused.
  strictEqual(await keyMatches(`Bearer ${UTF8_KEY}`, UTF8_KEY), false);
  // Latin-1's bytes for "é" (0xE9), not UTF-8's (0xC3 0xA9).
  strictEqual(await keyMatches("Bearer \u00e9", "é"), false);
  strictEqual(await keyMatches(`Bearer ${asHeader("é")}`, "é"), true);
  for (const value of nearMisses(asHeader(UTF8_KEY))) {
    strictEqual(await keyMatches(value, UTF8_KEY), false, value.slice(0, 60));
  }
  // An empty configured key matches nothing, not even an empty bearer value.
  for (const value of ["Bearer ", "Bearer", "", "Basic x"]) {
    strictEqual(await keyMatches(value, ""), false, value);
  }
});

/** A view of `bytes` that counts the reads of each index. */
function counted(bytes: Uint8Array): { view: Uint8Array; reads: number[] } {
  const reads = new Array<number>(bytes.length).fill(0);
  const view = new Proxy(bytes, {
    get(target, prop) {
      if (typeof prop === "string" && /^\d+$/.test(prop)) reads[Number(prop)]! += 1;
      return Reflect.get(target, prop);
    },
  });
  return { view, reads };
}

/** Whether `equal` reads every byte of both digests, for equal ones and ones differing anywhere. */
function readsEveryByte(equal: DigestCompare): boolean {
  const base = crypto.getRandomValues(new Uint8Array(DIGEST_BYTES));
  for (const at of [-1, 0, 1, 15, DIGEST_BYTES - 1]) {
    const other = base.slice();
    if (at >= 0) other[at]! ^= 0x80;
    const a = counted(base), b = counted(other);
    const same = equal(a.view, b.view);
    if (same !== (at < 0)) throw new Error(`the compare got ${same} with a difference at ${at}`);
    if (![...a.reads, ...b.reads].every((n) => n >= 1)) return false;
  }
  return true;
}

Deno.test("API key compare: every byte of both 32-byte digests is read, wherever they differ", () => {
  ok(readsEveryByte(digestsEqual));
  strictEqual(digestsEqual(new Uint8Array(31), new Uint8Array(31)), false, "short digests");
  strictEqual(digestsEqual(new Uint8Array(33), new Uint8Array(33)), false, "long digests");
  strictEqual(digestsEqual(new Uint8Array(32), new Uint8Array(32)), true);
});

Deno.test("planted error: a compare that stops at the first difference fails the read-every-byte check", () => {
  strictEqual(readsEveryByte(earlyExit), false);
});

Deno.test("API key: the compare always gets two 32-byte digests, whatever the header", async () => {
  const lengths: number[][] = [];
  const recording: DigestCompare = (a, b) => {
    lengths.push([a.length, b.length]);
    return digestsEqual(a, b);
  };
  const values = [null, ...nearMisses(KEY), `Bearer ${UTF8_KEY}`, `Bearer ${KEY}`];
  for (const v of values) await keyMatches(v, KEY, recording);
  deepStrictEqual(lengths, values.map(() => [DIGEST_BYTES, DIGEST_BYTES]));
});

Deno.test("server: wrong keys get 401 in-process, 1 MB included; the right key (UTF-8 too) gets 200", async () => {
  for (const key of [KEY, UTF8_KEY]) {
    const s = await mockServer({ apiKey: key });
    try {
      const models = async (authorization?: string) => {
        const headers: Record<string, string> = authorization === undefined
          ? {}
          : { authorization };
        const res = await s.server.fetch(new Request(new URL("v1/models", s.url), { headers }));
        const body = await res.text();
        return { status: res.status, body };
      };
      const wrong = [
        ...randomKeys(200, 7).map((k) => `Bearer ${k}`),
        // Headers trim the value and refuse NUL: those misses are for `keyMatches` itself.
        ...nearMisses(asHeader(key)).filter((v) =>
          v.trim() !== `Bearer ${asHeader(key)}` && !v.includes("\0")
        ),
      ];
      for (const value of wrong) {
        const r = await models(value);
        strictEqual(r.status, 401, value.slice(0, 60));
        strictEqual(JSON.parse(r.body).error.code, "invalid_api_key");
      }
      strictEqual((await models()).status, 401);
      strictEqual((await models(`Bearer ${asHeader(key)}`)).status, 200);
    } finally {
      await s.close();
    }
  }
});

Deno.test("server over sockets: a UTF-8 key sent as bytes gets in; control bytes and 1 MB are refused", async () => {
  const s = await mockServer({ apiKey: UTF8_KEY });
  try {
    const get = (authorization: string) =>
      rawRequest(s.url, [
        "GET /v1/models HTTP/1.1",
        `Host: ${s.url.host}`,
        `Authorization: ${authorization}`,
        "Connection: close",
      ]);
    // rawRequest writes the head as UTF-8: the key's bytes, as a client sends them.
    strictEqual((await get(`Bearer ${UTF8_KEY}`))?.status, 200);
    const refused = [
      `Bearer ${UTF8_KEY.slice(0, -2)}`,
      `Bearer ${UTF8_KEY}x`,
      `Bearer ${UTF8_KEY.normalize("NFD")}`,
      `Bearer ${UTF8_KEY}\0`,
      `Bearer \x01${UTF8_KEY}`,
      `Bearer ${UTF8_KEY}\x7f`,
      `Bearer ${"x".repeat(1 << 20)}`,
    ];
    for (const value of refused) {
      const status = (await get(value))?.status;
      // 401 from Kiln, or 400 from Deno's HTTP parser (control bytes, an oversized head).
      ok(status === 401 || status === 400, `${JSON.stringify(value.slice(0, 40))}: ${status}`);
    }
    strictEqual((await get(`Bearer ${UTF8_KEY}`))?.status, 200, "still serving");
  } finally {
    await s.close();
  }
});
