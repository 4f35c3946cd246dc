/**
 * Bounded-memory writes of streams of bytes into GPU buffers, for the weight upload. Bytes are
 * gathered into a few reused staging buffers (MAP_WRITE | COPY_SRC, `STAGING_BUFFERS` of
 * `STAGING_CHUNK_BYTES`): a full one is unmapped, copied into its destinations with
 * `copyBufferToBuffer` (one chunk holds the ends and starts of several buffers, and all of a
 * small one's: norms and biases do not cost a chunk each), and mapped again (`mapAsync`) for its
 * next turn while the others fill. So at most that many chunks are in flight, and nothing the
 * size of a tensor or of the file is held. `via: "write"` (the default) sends the same chunks
 * with `queue.writeBuffer` from one reused array instead, waiting for the queue every
 * `STAGING_BUFFERS` chunks so that the implementation's own copies stay bounded too: on lavapipe
 * (`bench/upload.ts`) it was as fast as the mapped ring or faster, and steadier on a loaded
 * machine (the ring waits on `mapAsync` once per chunk).
 *
 * Writes may be any length; each destination receives its bytes back to back, in pieces whose
 * offsets and sizes are multiples of 4 (its last one zero-padded).
 *
 * @module
 */
import { createTrackedBuffer } from "../gpu/memory_ledger.ts";

/** How the upload moves bytes: through mapped staging buffers, or `queue.writeBuffer`. */
export type UploadVia = "staging" | "write";

/** Bytes of one staging buffer (and at most those of a piece read from the file). */
export const STAGING_CHUNK_BYTES = 8 << 20;
/** Staging buffers in the ring. */
export const STAGING_BUFFERS = 4;

/** How to upload. */
export interface UploadOptions {
  /** `write` (default) or `staging`. */
  via?: UploadVia;
}

interface Slot {
  buffer: GPUBuffer;
  /** Settles once the buffer is mapped for writing again, or mapping failed (`error`). */
  ready: Promise<void>;
  error?: unknown;
}

/** A copy out of the chunk being filled. */
interface Copy {
  dst: GPUBuffer;
  dstOffset: number;
  srcOffset: number;
  size: number;
}

/** The chunk being filled: a mapped staging buffer's range, or `via: "write"`'s array. */
interface Chunk {
  slot: Slot | undefined;
  bytes: Uint8Array<ArrayBuffer>;
  used: number;
  copies: Copy[];
}

const align4 = (n: number) => Math.ceil(n / 4) * 4;

/** Writes into one destination buffer at a time through a ring of staging chunks. */
export class StagingWriter {
  readonly #device: GPUDevice;
  readonly #via: UploadVia;
  readonly #slots: Slot[] = [];
  #next = 0;
  #cur: Chunk | undefined;
  /** The destination, where its bytes in the current chunk start, and where they go. */
  #dst: { buffer: GPUBuffer; srcStart: number; dstOffset: number } | undefined;
  #chunks = 0;
  /** The one chunk `via: "write"` fills (`writeBuffer` copies it before returning). */
  #scratch: Uint8Array<ArrayBuffer> | undefined;

  constructor(device: GPUDevice, options: UploadOptions = {}) {
    this.#device = device;
    this.#via = options.via ?? "write";
  }

  /** Write into `dst` from its start (after `end()` of the one before). */
  begin(dst: GPUBuffer): void {
    this.#dst = { buffer: dst, srcStart: this.#cur?.used ?? 0, dstOffset: 0 };
  }

  /** Append `bytes` to the destination. */
  async write(bytes: Uint8Array): Promise<void> {
    let at = 0;
    while (at < bytes.length) {
      const cur = this.#cur ?? await this.#take();
      const n = Math.min(bytes.length - at, cur.bytes.length - cur.used);
      cur.bytes.set(bytes.subarray(at, at + n), cur.used);
      cur.used += n;
      at += n;
      if (cur.used === cur.bytes.length) await this.#flush();
    }
  }

  /**
   * Append `length` bytes that `fill` puts straight into the chunk being filled: it is called with
   * each piece of chunk space in turn (`into`, and how many of the bytes came before it), so a
   * source that reads into a buffer (`ByteSource.readInto`) fills the staging memory itself and
   * nothing is allocated or copied on the way.
   */
  async writeFrom(
    length: number,
    fill: (into: Uint8Array, done: number) => Promise<void>,
  ): Promise<void> {
    let done = 0;
    while (done < length) {
      const cur = this.#cur ?? await this.#take();
      const n = Math.min(length - done, cur.bytes.length - cur.used);
      await fill(cur.bytes.subarray(cur.used, cur.used + n), done);
      cur.used += n;
      done += n;
      if (cur.used === cur.bytes.length) await this.#flush();
    }
  }

  /** The destination is complete: its last piece (padded to 4 bytes) goes with the chunk. */
  end(): void {
    const cur = this.#cur;
    if (cur) {
      const end = align4(cur.used);
      cur.bytes.fill(0, cur.used, end);
      cur.used = end;
      this.#cut(cur);
    }
    this.#dst = undefined;
  }

  /** Send the last chunk, wait for every copy, then free the staging buffers. */
  async close(): Promise<void> {
    if (this.#cur && this.#cur.used > 0) await this.#flush();
    await Promise.all(this.#slots.map((s) => s.ready));
    for (const s of this.#slots) if (s.error !== undefined) throw s.error;
    this.destroy();
  }

  /** Free the staging buffers now (a failed upload; safe after `close()`). */
  destroy(): void {
    this.#cur = undefined;
    for (const s of this.#slots.splice(0)) s.buffer.destroy();
  }

  /** Record the destination's bytes in `cur` so far as one copy. */
  #cut(cur: Chunk): void {
    const d = this.#dst;
    if (!d || cur.used === d.srcStart) return;
    const size = cur.used - d.srcStart;
    cur.copies.push({ dst: d.buffer, dstOffset: d.dstOffset, srcOffset: d.srcStart, size });
    d.dstOffset += size;
    d.srcStart = cur.used;
  }

  async #take(): Promise<Chunk> {
    if (this.#via === "write") {
      if (this.#chunks > 0 && this.#chunks % STAGING_BUFFERS === 0) {
        await this.#device.queue.onSubmittedWorkDone();
      }
      this.#scratch ??= new Uint8Array(STAGING_CHUNK_BYTES);
      return this.#begun({ slot: undefined, bytes: this.#scratch, used: 0, copies: [] });
    }
    let slot = this.#slots[this.#next];
    if (slot === undefined) {
      const buffer = createTrackedBuffer(this.#device, {
        label: `upload:staging${this.#next}`,
        size: STAGING_CHUNK_BYTES,
        usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC,
        mappedAtCreation: true,
      }, "staging");
      slot = { buffer, ready: Promise.resolve() };
      this.#slots.push(slot);
    }
    this.#next = (this.#next + 1) % STAGING_BUFFERS;
    await slot.ready;
    if (slot.error !== undefined) throw slot.error;
    const bytes = new Uint8Array(slot.buffer.getMappedRange());
    return this.#begun({ slot, bytes, used: 0, copies: [] });
  }

  #begun(chunk: Chunk): Chunk {
    this.#cur = chunk;
    if (this.#dst) this.#dst.srcStart = 0;
    return chunk;
  }

  async #flush(): Promise<void> {
    const cur = this.#cur!;
    this.#cut(cur);
    this.#cur = undefined;
    this.#chunks++;
    const queue = this.#device.queue;
    if (cur.slot === undefined) {
      for (const c of cur.copies) {
        queue.writeBuffer(c.dst, c.dstOffset, cur.bytes, c.srcOffset, c.size);
      }
    } else {
      const { slot } = cur;
      slot.buffer.unmap();
      const encoder = this.#device.createCommandEncoder({ label: "upload:copy" });
      for (const c of cur.copies) {
        encoder.copyBufferToBuffer(slot.buffer, c.srcOffset, c.dst, c.dstOffset, c.size);
      }
      queue.submit([encoder.finish()]);
      // Settles only: a failed mapping (the device lost) is thrown by the next turn of this
      // slot, or by close().
      slot.ready = slot.buffer.mapAsync(GPUMapMode.WRITE).then(
        () => {},
        (e) => void (slot.error = e),
      );
    }
    await Promise.resolve();
  }
}
