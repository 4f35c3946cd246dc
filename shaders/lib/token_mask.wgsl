// The per-sequence token bitmask of guided decoding: row s holds `words` = ceil(vocab / 32) u32
// words, and bit i % 32 of word i / 32 is set when token i may come next. A row of all ones
// leaves its sequence free, so constrained and free sequences share a batch. Kernels that import
// this bind the rows at binding 8.

@group(0) @binding(8) var<storage, read> token_mask: array<u32>;

// Whether token `i` is allowed by the row starting at word `row_base`.
fn token_allowed(row_base: u32, i: u32) -> bool {
  return ((token_mask[row_base + i / 32u] >> (i % 32u)) & 1u) != 0u;
}
