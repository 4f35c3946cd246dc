/**
 * The steps around the layers: the token gather (ids from a token store), the embedding (one
 * dispatch per part of the table, a big vocabulary split by rows; one scale, the family's times
 * the config's), and the head: the LM head over the wanted rows with the final norm folded in
 * (and the logit scale), then the final logit soft-cap as an in-place pass.
 */
import { isFloatDtype } from "../../gpu/dtype.ts";
import { prepareEmbedding, prepareScaleInPlace } from "../../gpu/kernels/dense.ts";
import { prepareGather } from "../../gpu/kernels/tokens.ts";
import { prepareQuantEmbedding } from "../../gpu/product/matvec.ts";
import type { Part, PlanContext } from "./context.ts";

/** The gather from `store` (when given) and the embedding of the step's tokens into x. */
export function embedParts(x: PlanContext, store?: GPUBuffer): Part[] {
  const { m, c, s, d, tokens } = x;
  const parts: Part[] = [];
  if (store) parts.push(prepareGather(d, { store, index: s.index, ids: s.ids, count: tokens }));
  const embedScale = (c.embedScale ?? 1) * (c.embeddingScale ?? 1);
  let row0 = 0;
  for (const [i, part] of m.embed.parts.entries()) {
    const args = {
      ids: s.ids,
      table: part.buffer,
      out: s.x,
      tokens,
      hidden: x.H,
      vocab: c.vocabSize,
      rowStart: row0,
      rowEnd: row0 + part.rows,
      ...(embedScale !== 1 ? { scale: embedScale } : {}),
    };
    const label = m.embed.parts.length > 1 ? `embed.${i}` : "embed";
    parts.push(
      isFloatDtype(part.dtype)
        ? prepareEmbedding(d, { ...args, dtype: part.dtype }, label)
        : prepareQuantEmbedding(d, { ...args, type: part.dtype }, label),
    );
    row0 += part.rows;
  }
  return parts;
}

/**
 * The LM head over `rows` rows of `s.rows` (copied out of x after the body) through the final
 * norm, and the logit soft-cap. A step without logit rows (a prompt chunk that does not end its
 * prompt) has none.
 */
export function headParts(x: PlanContext, rows: number): Part[] {
  const { m, c, s } = x;
  if (rows <= 0) return [];
  const parts: Part[] = [x.linear(
    {
      x: s.rows,
      weight: m.lmHead,
      y: s.logits,
      n: c.vocabSize,
      k: x.H,
      norm: { weight: m.finalNorm, eps: c.rmsNormEps },
      ...(c.logitScale !== undefined ? { scale: 1 / c.logitScale } : {}),
    },
    "lm_head",
    rows,
  )];
  if (c.finalSoftcap !== undefined) {
    parts.push(prepareScaleInPlace(x.d, {
      x: s.logits,
      count: rows * c.vocabSize,
      op: "softcap",
      value: c.finalSoftcap,
    }, "logit_softcap"));
  }
  return parts;
}
