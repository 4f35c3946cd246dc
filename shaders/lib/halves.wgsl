// 16-bit floats packed two to a u32 word (element 2i in the low half), widened to f32 without
// `enable f16` (no shader-f16 feature needed). BF16 is the upper half of an f32.

fn f16_pair(word: u32) -> vec2<f32> {
  return unpack2x16float(word);
}

fn bf16_pair(word: u32) -> vec2<f32> {
  return vec2<f32>(bitcast<f32>(word << 16u), bitcast<f32>(word & 0xffff0000u));
}

// Four f16 or bf16 values from two words.
fn f16x4(v: vec2<u32>) -> vec4<f32> {
  return vec4<f32>(f16_pair(v.x), f16_pair(v.y));
}

fn bf16x4(v: vec2<u32>) -> vec4<f32> {
  return vec4<f32>(bf16_pair(v.x), bf16_pair(v.y));
}
