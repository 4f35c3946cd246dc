/**
 * SHA-256 (FIPS 180-4), synchronous. The prefix cache keys blocks inside the engine's synchronous
 * scheduling step, and WebCrypto's `crypto.subtle.digest` only answers with a promise, so this
 * small implementation does the hashing; `sha256_test.ts` checks it against WebCrypto.
 */

/** The first `n` primes. */
function primes(n: number): number[] {
  const out: number[] = [];
  for (let p = 2; out.length < n; p++) if (out.every((q) => p % q !== 0)) out.push(p);
  return out;
}

/** The first 32 bits of the fractional part of `x`. */
const frac32 = (x: number) => ((x - Math.floor(x)) * 2 ** 32) >>> 0;

// FIPS 180-4 §4.2.2 and §5.3.3: the round constants are the first 32 bits of the fractional
// parts of the cube roots of the first 64 primes; the initial state those of the square roots
// of the first 8 (double precision leaves ~20 bits of margin below the 32 taken).
const K = Uint32Array.from(primes(64), (p) => frac32(Math.cbrt(p)));
const H0 = Uint32Array.from(primes(8), (p) => frac32(Math.sqrt(p)));

const W = new Uint32Array(64);
const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));

/** The SHA-256 digest of `data` (32 bytes). */
export function sha256(data: Uint8Array): Uint8Array {
  const len = data.length;
  // The message, a 1 bit, zeros, and the length in bits as a big-endian u64: whole 64-byte blocks.
  const padded = new Uint8Array(Math.ceil((len + 9) / 64) * 64);
  padded.set(data);
  padded[len] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(len / 2 ** 29));
  view.setUint32(padded.length - 4, (len * 8) >>> 0);
  const H = H0.slice();
  for (let off = 0; off < padded.length; off += 64) {
    for (let t = 0; t < 16; t++) W[t] = view.getUint32(off + 4 * t);
    for (let t = 16; t < 64; t++) {
      const w15 = W[t - 15]!, w2 = W[t - 2]!;
      const s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >>> 3);
      const s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >>> 10);
      W[t] = W[t - 16]! + s0 + W[t - 7]! + s1;
    }
    let a = H[0]!, b = H[1]!, c = H[2]!, d = H[3]!, e = H[4]!, f = H[5]!, g = H[6]!, h = H[7]!;
    for (let t = 0; t < 64; t++) {
      const S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const ch = (e & f) ^ (~e & g);
      const t1 = (h + S1 + ch + K[t]! + W[t]!) | 0;
      const S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    H[0] = H[0]! + a;
    H[1] = H[1]! + b;
    H[2] = H[2]! + c;
    H[3] = H[3]! + d;
    H[4] = H[4]! + e;
    H[5] = H[5]! + f;
    H[6] = H[6]! + g;
    H[7] = H[7]! + h;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) outView.setUint32(4 * i, H[i]!);
  return out;
}
