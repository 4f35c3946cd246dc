/** References for `shaders/tokens.wgsl`. */

/** ids[i] = store[index[i]]; an index outside the store gives 0xffffffff. */
export function gatherRef(store: ArrayLike<number>, index: ArrayLike<number>): Uint32Array {
  return Uint32Array.from(
    { length: index.length },
    (_, i) => index[i]! < store.length ? store[index[i]!]! : 0xffffffff,
  );
}

/** A copy of `store` with store[at[s]] = result[2s] for every `at` inside it. */
export function appendRef(
  store: ArrayLike<number>,
  result: ArrayLike<number>,
  at: ArrayLike<number>,
): Uint32Array {
  const out = Uint32Array.from(store);
  for (let s = 0; s < at.length; s++) if (at[s]! < out.length) out[at[s]!] = result[2 * s]!;
  return out;
}
