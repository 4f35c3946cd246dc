/**
 * How a checkpoint's tensors become GPU buffers: which tensors stack into one buffer, which
 * split by rows over several, and what dtype each buffer holds. Then the upload itself, one
 * buffer at a time, from the file in chunks of rows in bounded, reused staging chunks
 * (`staging.ts`): neither the file nor a whole tensor is held in memory.
 *
 * Stacking (q/k/v, gate/up) lets one dispatch do the work of three or two. Float tensors stack
 * in their common dtype (widened to f32 if they differ, as in mixed checkpoints); quantized
 * ones stack only with tensors of the same type, since each buffer has one block format. A
 * stack bigger than one binding is uploaded tensor by tensor, and a tensor bigger than one
 * binding is split by rows (a 128k-token vocabulary's F16 embedding is 1 GB).
 */
import { EngineError } from "../contract/errors.ts";
import {
  decodeWeights,
  DTYPE_BYTES,
  encodeWeights,
  isFloatDtype,
  type TensorDtype,
  type WeightDtype,
} from "../gpu/dtype.ts";
import { quantizedRowBytes } from "../gpu/formats/registry.ts";
import { createTrackedBuffer } from "../gpu/memory_ledger.ts";
import { STAGING_CHUNK_BYTES, type StagingWriter } from "./staging.ts";
import { readInto } from "../formats/source.ts";
import type { WeightInfo } from "../model/weights.ts";

/** Rows [row0, row1) of one tensor, in HF row order. */
export interface RowSlice {
  tensor: WeightInfo;
  row0: number;
  row1: number;
}

/** One buffer to create: slices stacked row-wise, converted to `dtype`. */
export interface BufferPlan {
  label: string;
  dtype: TensorDtype;
  slices: RowSlice[];
}

const rowsOf = (t: WeightInfo): number => (t.shape.length > 1 ? t.shape[0]! : 1);
const colsOf = (t: WeightInfo): number => t.shape[t.shape.length - 1] ?? 1;

/** Bytes of one row of `t` stored as `dtype`. */
export function rowBytes(t: WeightInfo, dtype: TensorDtype): number {
  return isFloatDtype(dtype) ? colsOf(t) * DTYPE_BYTES[dtype] : quantizedRowBytes(dtype, colsOf(t));
}

export function planBytes(p: BufferPlan): number {
  return p.slices.reduce((n, s) => n + (s.row1 - s.row0) * rowBytes(s.tensor, p.dtype), 0);
}

/**
 * The buffers for `tensors` stacked row-wise (one tensor: itself), each at most `limit` bytes.
 * `as`: convert every float tensor to this dtype (norms and biases become f32).
 */
export function planStack(
  label: string,
  tensors: WeightInfo[],
  limit: number,
  as?: WeightDtype,
): BufferPlan[] {
  const floats = tensors.every((t) => isFloatDtype(t.dtype));
  const common = new Set(tensors.map((t) => t.dtype)).size === 1 ? tensors[0]!.dtype : "f32";
  const target = (t: WeightInfo): TensorDtype =>
    as && isFloatDtype(t.dtype) ? as : floats ? common : t.dtype;
  // Runs of neighbours that share a target dtype.
  const runs: WeightInfo[][] = [];
  for (const t of tensors) {
    const last = runs[runs.length - 1];
    if (last && target(last[0]!) === target(t)) last.push(t);
    else runs.push([t]);
  }
  const plans: BufferPlan[] = [];
  const whole = (t: WeightInfo): RowSlice => ({ tensor: t, row0: 0, row1: rowsOf(t) });
  for (const run of runs) {
    const dtype = target(run[0]!);
    const stacked = { label, dtype, slices: run.map(whole) };
    if (planBytes(stacked) <= limit) {
      plans.push(run.length === tensors.length ? stacked : { ...stacked, label: run[0]!.name });
      continue;
    }
    for (const t of run) {
      const per = Math.floor(limit / rowBytes(t, dtype));
      if (per < 1) {
        throw new EngineError(
          "ResourceExhausted",
          `tensor ${t.name}: one row needs ${rowBytes(t, dtype)} bytes; a binding holds ${limit}`,
        );
      }
      const rows = rowsOf(t);
      for (let r = 0; r < rows; r += per) {
        const row1 = Math.min(rows, r + per);
        const name = per >= rows ? t.name : `${t.name}[${r}:${row1}]`;
        plans.push({ label: name, dtype, slices: [{ tensor: t, row0: r, row1 }] });
      }
    }
  }
  return plans;
}

/**
 * The bytes of rows [row0, row1) of `t` in HF order, as the file stores them: `take` rows at a
 * time, each piece handed to `use` before the next is read. (A tensor whose rows are stored in
 * another order, `rowOrder`, is read whole once, a bounded single tensor, and its rows picked.)
 */
async function readRows(
  s: RowSlice,
  take: number,
  use: (bytes: Uint8Array) => Promise<void>,
): Promise<void> {
  const t = s.tensor;
  const bytesPerRow = t.length / rowsOf(t);
  const stored = t.rowOrder && await readExact(t, 0, t.length);
  const all = stored && inOrder(t, t.rowOrder!(), stored);
  for (let r = s.row0; r < s.row1; r += take) {
    const n = Math.min(take, s.row1 - r);
    await use(
      all
        ? all.slice(r * bytesPerRow, (r + n) * bytesPerRow)
        : await readExact(t, r * bytesPerRow, n * bytesPerRow),
    );
  }
}

/** `stored` (all of `t`) with its rows put in HF order: HF row i is stored row `order[i]`. */
function inOrder(t: WeightInfo, order: Uint32Array, stored: Uint8Array): Uint8Array {
  const unit = t.length / order.length;
  if (!Number.isInteger(unit)) {
    throw EngineError.invalidArgument(
      `tensor ${t.name}: ${t.length} bytes in ${order.length} rows`,
    );
  }
  const out = new Uint8Array(t.length);
  for (let i = 0; i < order.length; i++) {
    const from = order[i]! * unit;
    out.set(stored.subarray(from, from + unit), i * unit);
  }
  return out;
}

async function readExact(t: WeightInfo, at: number, length: number): Promise<Uint8Array> {
  const raw = await t.source.read(t.offset + at, length);
  if (raw.length !== length) {
    throw EngineError.invalidArgument(
      `tensor ${t.name}: read ${raw.length} of ${length} bytes (truncated file?)`,
    );
  }
  return raw;
}

/** Create `plan`'s buffer (sized and labelled by the plan, on the memory ledger as weights). */
export function allocatePlan(
  device: GPUDevice,
  plan: BufferPlan,
  usage: GPUBufferUsageFlags,
): GPUBuffer {
  return createTrackedBuffer(device, {
    label: plan.label,
    size: Math.max(4, Math.ceil(planBytes(plan) / 4) * 4),
    usage: usage | GPUBufferUsage.COPY_DST,
  }, "weights");
}

/**
 * Fill `plan`'s `buffer` from the file through `writer`'s staging chunks, reading at most about
 * one chunk of rows at a time (the whole file, or tensor, is never held); `progress` gets the
 * file bytes each piece read.
 */
export async function fillPlan(
  plan: BufferPlan,
  buffer: GPUBuffer,
  progress: (bytes: number, tensor: string) => void,
  writer: StagingWriter,
): Promise<void> {
  writer.begin(buffer);
  for (const s of plan.slices) {
    const t = s.tensor;
    const [from, to] = [t.dtype, plan.dtype];
    let convert: ((raw: Uint8Array) => Uint8Array) | undefined;
    if (from !== to) {
      if (!isFloatDtype(from) || !isFloatDtype(to)) {
        throw new Error(`tensor ${t.name}: cannot convert ${from} to ${to}`);
      }
      convert = (raw) => encodeWeights(decodeWeights(raw, from), to);
    }
    if (!convert && t.rowOrder === undefined && t.source.readInto) {
      // The rows as stored, read straight into the staging chunks.
      const bytesPerRow = t.length / rowsOf(t);
      const start = t.offset + s.row0 * bytesPerRow;
      await writer.writeFrom((s.row1 - s.row0) * bytesPerRow, async (into, done) => {
        await readInto(t.source, start + done, into);
        progress(into.length, t.name);
      });
      continue;
    }
    const widest = Math.max(t.length / rowsOf(t), rowBytes(t, plan.dtype));
    const take = Math.max(1, Math.floor(STAGING_CHUNK_BYTES / widest));
    await readRows(s, take, async (raw) => {
      await writer.write(convert ? convert(raw) : raw);
      progress(raw.length, t.name);
    });
  }
  writer.end();
}
