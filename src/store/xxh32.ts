/**
 * XXH32 (xxHash's 32-bit hash, seed 0), in plain JavaScript, written from its published
 * specification: the model store's chunk hashes (see `checked.ts`). It is a fast
 * non-cryptographic hash, about 4 GB/s in V8 (Math.imul over an Int32Array of the bytes), for
 * catching corruption, not an adversary: a changed chunk keeps its hash with a chance of about 1
 * in 4 billion. Written here rather than taken from hash-wasm (already a dependency, for the
 * router's XXH3) because the page bundles the store too, and hash-wasm's XXH64 would add 8.5 KiB
 * to it, its XXH3 17 KiB; this is about 1 KiB.
 */

const P1 = 0x9e3779b1 | 0;
const P2 = 0x85ebca77 | 0;
const P3 = 0xc2b2ae3d | 0;
const P4 = 0x27d4eb2f | 0;
const P5 = 0x165667b1 | 0;

/** Whether an Int32Array reads little-endian lanes here (it does on every platform in use). */
const LITTLE = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
/** Where bytes not aligned to 4 (or on a big-endian platform) are copied to be read as lanes. */
const SCRATCH = new Int32Array(16 * 1024);
const SCRATCH_BYTES = new Uint8Array(SCRATCH.buffer);

const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r));

/** An XXH32 computed piece by piece: `update` as often as needed, then `digest`. */
export class Xxh32 {
  #v1 = 0;
  #v2 = 0;
  #v3 = 0;
  #v4 = 0;
  /** Bytes hashed so far. */
  #total = 0;
  /** Bytes of a 16-byte stripe not yet complete. */
  readonly #tail = new Uint8Array(16);
  #held = 0;

  /** A hash of no bytes yet. */
  constructor() {
    this.reset();
  }

  /** Start again from no bytes. */
  reset(): this {
    this.#v1 = (P1 + P2) | 0;
    this.#v2 = P2;
    this.#v3 = 0;
    this.#v4 = -P1 | 0;
    this.#total = 0;
    this.#held = 0;
    return this;
  }

  /** Hash `bytes` after those before. */
  update(bytes: Uint8Array): this {
    const n = bytes.length;
    let at = 0;
    this.#total += n;
    if (this.#held > 0) {
      at = Math.min(16 - this.#held, n);
      this.#tail.set(bytes.subarray(0, at), this.#held);
      this.#held += at;
      if (this.#held < 16) return this;
      this.#stripes(this.#tail, 0, 16);
      this.#held = 0;
    }
    const whole = n - at - ((n - at) % 16);
    if (whole > 0) this.#stripes(bytes, at, whole);
    at += whole;
    if (at < n) {
      this.#tail.set(bytes.subarray(at));
      this.#held = n - at;
    }
    return this;
  }

  /** Hash `length` bytes (a multiple of 16) of `bytes` from `at` into the four lanes. */
  #stripes(bytes: Uint8Array, at: number, length: number): void {
    const start = bytes.byteOffset + at;
    if (LITTLE && start % 4 === 0) {
      this.#lanes(new Int32Array(bytes.buffer, start, length / 4), length / 4);
      return;
    }
    for (let done = 0; done < length; done += SCRATCH_BYTES.length) {
      const n = Math.min(SCRATCH_BYTES.length, length - done);
      SCRATCH_BYTES.set(bytes.subarray(at + done, at + done + n));
      if (!LITTLE) {
        for (let i = 0; i < n; i += 4) {
          SCRATCH[i / 4] = SCRATCH_BYTES[i]! | (SCRATCH_BYTES[i + 1]! << 8) |
            (SCRATCH_BYTES[i + 2]! << 16) | (SCRATCH_BYTES[i + 3]! << 24);
        }
      }
      this.#lanes(SCRATCH, n / 4);
    }
  }

  /** The spec's round over the first `count` words of `w` (a multiple of 4). */
  #lanes(w: Int32Array, count: number): void {
    let a = this.#v1, b = this.#v2, c = this.#v3, d = this.#v4;
    for (let i = 0; i < count; i += 4) {
      a = (a + Math.imul(w[i]!, P2)) | 0;
      a = Math.imul((a << 13) | (a >>> 19), P1);
      b = (b + Math.imul(w[i + 1]!, P2)) | 0;
      b = Math.imul((b << 13) | (b >>> 19), P1);
      c = (c + Math.imul(w[i + 2]!, P2)) | 0;
      c = Math.imul((c << 13) | (c >>> 19), P1);
      d = (d + Math.imul(w[i + 3]!, P2)) | 0;
      d = Math.imul((d << 13) | (d >>> 19), P1);
    }
    this.#v1 = a;
    this.#v2 = b;
    this.#v3 = c;
    this.#v4 = d;
  }

  /** The hash of every byte given so far, as an unsigned 32-bit number. */
  digest(): number {
    let h = this.#total >= 16
      ? (rotl(this.#v1, 1) + rotl(this.#v2, 7) + rotl(this.#v3, 12) + rotl(this.#v4, 18)) | 0
      : P5;
    h = (h + (this.#total | 0)) | 0; // the length modulo 2^32
    const t = this.#tail;
    let i = 0;
    for (; i + 4 <= this.#held; i += 4) {
      const lane = t[i]! | (t[i + 1]! << 8) | (t[i + 2]! << 16) | (t[i + 3]! << 24);
      h = Math.imul(rotl((h + Math.imul(lane, P3)) | 0, 17), P4);
    }
    for (; i < this.#held; i++) h = Math.imul(rotl((h + Math.imul(t[i]!, P5)) | 0, 11), P1);
    h ^= h >>> 15;
    h = Math.imul(h, P2);
    h ^= h >>> 13;
    h = Math.imul(h, P3);
    h ^= h >>> 16;
    return h >>> 0;
  }
}

/** XXH32 of `bytes`, as 8 hex digits (the canonical, big-endian form). */
export function xxh32Hex(bytes: Uint8Array): string {
  return hex8(new Xxh32().update(bytes).digest());
}

/** A 32-bit number as 8 hex digits. */
export function hex8(n: number): string {
  return n.toString(16).padStart(8, "0");
}

/**
 * The XXH32 of each `chunkBytes` of a stream of bytes (the last chunk may be shorter), joined
 * as 8 hex digits each: what an entry's sidecar records (`EntryMeta.chunks`).
 */
export class ChunkHasher {
  readonly #hash = new Xxh32();
  /** Bytes of the current chunk hashed so far. */
  #in = 0;
  #out: string[] = [];

  /** Hashes of `chunkBytes`-byte chunks. */
  constructor(readonly chunkBytes: number) {}

  /** Hash `bytes` after those before. */
  update(bytes: Uint8Array): void {
    for (let at = 0; at < bytes.length;) {
      const n = Math.min(this.chunkBytes - this.#in, bytes.length - at);
      this.#hash.update(bytes.subarray(at, at + n));
      this.#in += n;
      at += n;
      if (this.#in === this.chunkBytes) this.#close();
    }
  }

  #close(): void {
    this.#out.push(hex8(this.#hash.digest()));
    this.#hash.reset();
    this.#in = 0;
  }

  /** Every chunk's hash, the last (partial) chunk's included. */
  finish(): string {
    if (this.#in > 0) this.#close();
    return this.#out.join("");
  }
}
