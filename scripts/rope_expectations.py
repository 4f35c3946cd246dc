#!/usr/bin/python3
"""Independent RoPE expectations for Kiln (test/fixtures/rope/expectations.json).

This script PORTS the math of Hugging Face transformers' RoPE initialisers
(`ROPE_INIT_FUNCTIONS` in src/transformers/modeling_rope_utils.py: default, linear,
dynamic, yarn, llama3, longrope) and of Gemma 3's per-layer bases (`rope_theta` for
global layers with the config's scaling, `rope_local_base_freq` unscaled for sliding
ones), rewritten here in plain float64 torch (transformers is not installable in this
environment, and its float32 arithmetic would blur a tight check). Nothing of Kiln is
imported or consulted: each case is an HF-style config.json, and the expectation is
what transformers would compute for it, except where Kiln documents another
convention, named in the case's "convention":

* dynamic: vLLM's, fixed once for a context of `factor` times the model's
  (transformers' function evaluated at seq_len = factor * max_position_embeddings),
  not recomputed from the current length.
* longrope: the factor list is chosen from the engine's context as llama.cpp does
  (long when it exceeds original_max_position_embeddings), which is transformers'
  rule with seq_len = that context.
* yarn: the configs give `factor` = max / original context (transformers' two
  readings of `factor` then agree), and llama.cpp's ramp equals transformers' with
  `truncate` true.

Run with Debian's python (torch 1.13, numpy):
    /usr/bin/python3 scripts/rope_expectations.py [OUT]
"""
import json
import math
import sys

import torch

F64 = torch.float64


def rotary_dim(cfg):
    head = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    return int(head * cfg.get("partial_rotary_factor", 1.0))


def plain(base, dim):
    """1 / base^(2i/dim), i < dim/2."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=F64) / dim))


def rope_default(cfg, dim, seq_len):
    return plain(cfg["rope_theta"], dim), 1.0


def rope_linear(cfg, dim, seq_len):
    inv, att = rope_default(cfg, dim, seq_len)
    return inv / cfg["rope_scaling"]["factor"], att


def rope_dynamic(cfg, dim, seq_len):
    """NTK-aware base raised for seq_len past the model's context."""
    s = cfg["rope_scaling"]
    factor, max_pos = s["factor"], cfg["max_position_embeddings"]
    seq = max(seq_len or max_pos, max_pos)
    base = cfg["rope_theta"] * ((factor * seq / max_pos) - (factor - 1)) ** (dim / (dim - 2))
    return plain(base, dim), 1.0


def yarn_mscale(scale, m=1.0):
    return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0


def rope_yarn(cfg, dim, seq_len):
    s = cfg["rope_scaling"]
    base = cfg["rope_theta"]
    factor = s["factor"]
    original = s.get("original_max_position_embeddings") or cfg["max_position_embeddings"]
    att = s.get("attention_factor")
    if att is None:
        m, m_all = s.get("mscale"), s.get("mscale_all_dim")
        att = yarn_mscale(factor, m) / yarn_mscale(factor, m_all) if m and m_all \
            else yarn_mscale(factor)
    beta_fast = s.get("beta_fast") or 32
    beta_slow = s.get("beta_slow") or 1

    def correction_dim(turns):
        return dim * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if s.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=F64) - low) / (high - low), 0, 1)
    keep = 1 - ramp  # weight of the unscaled (extrapolated) frequency
    pos = base ** (torch.arange(0, dim, 2, dtype=F64) / dim)
    inv = (1.0 / (factor * pos)) * (1 - keep) + (1.0 / pos) * keep
    return inv, att


def rope_llama3(cfg, dim, seq_len):
    s = cfg["rope_scaling"]
    inv, att = rope_default(cfg, dim, seq_len)
    factor, lo, hi = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old = s["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > old / lo, inv / factor, inv)
    smooth = (old / wavelen - lo) / (hi - lo)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= old / hi) & (wavelen <= old / lo)
    return torch.where(medium, blended, scaled), att


def rope_longrope(cfg, dim, seq_len):
    s = cfg["rope_scaling"]
    if "original_max_position_embeddings" in cfg:
        original = cfg["original_max_position_embeddings"]
        factor = cfg["max_position_embeddings"] / original
    else:
        original = cfg["max_position_embeddings"]
        factor = s.get("factor")
    att = s.get("attention_factor")
    if att is None:
        att = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))
    ext = s["long_factor"] if seq_len and seq_len > original else s["short_factor"]
    ext = torch.tensor(ext, dtype=F64)
    return 1.0 / (ext * cfg["rope_theta"] ** (torch.arange(0, dim, 2, dtype=F64) / dim)), att


INIT = {
    "default": rope_default,
    "linear": rope_linear,
    "dynamic": rope_dynamic,
    "yarn": rope_yarn,
    "llama3": rope_llama3,
    "longrope": rope_longrope,
}


def llama(head_dim, heads=4, **extra):
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": head_dim * heads, "num_attention_heads": heads, "head_dim": head_dim,
        "intermediate_size": 64, "num_hidden_layers": 1, "vocab_size": 32,
        "max_position_embeddings": 4096, "rope_theta": 10000.0,
    }
    cfg.update(extra)
    return cfg


def phi3(head_dim, partial, short, long, original, max_pos, **scaling):
    cfg = llama(head_dim, architectures=["Phi3ForCausalLM"], model_type="phi3",
                partial_rotary_factor=partial, max_position_embeddings=max_pos,
                original_max_position_embeddings=original)
    cfg["rope_scaling"] = {"type": "longrope", "short_factor": short, "long_factor": long,
                           **scaling}
    return cfg


def ramp_factors(n, top, power):
    return [round(1 + (top - 1) * (i / (n - 1)) ** power, 4) for i in range(n)]


def cases():
    out = []

    def add(name, cfg, convention="transformers", context=None, seq_len=None, layer="global"):
        out.append((name, cfg, convention, context, seq_len, layer))

    for d in (64, 80, 96):
        add(f"default head {d}", llama(d, rope_theta=500000.0))
    for d, f in ((72, 2.0), (128, 4.0), (80, 0.25)):
        add(f"linear x{f} head {d}", llama(d, rope_scaling={"rope_type": "linear", "factor": f}))
    for d, f in ((64, 2.0), (96, 4.0), (112, 1.5)):
        cfg = llama(d, rope_scaling={"type": "dynamic", "factor": f})
        add(f"dynamic x{f} head {d}", cfg, "vllm: fixed for factor x the context", None,
            f * cfg["max_position_embeddings"])
    for d, f, theta, lo, hi, old in ((128, 8.0, 500000.0, 1.0, 4.0, 8192),
                                     (64, 32.0, 500000.0, 1.0, 4.0, 8192),
                                     (96, 4.0, 10000.0, 2.0, 8.0, 2048)):
        add(f"llama3 x{f} head {d}", llama(d, rope_theta=theta, max_position_embeddings=old * 16,
                                           rope_scaling={"rope_type": "llama3", "factor": f,
                                                         "low_freq_factor": lo,
                                                         "high_freq_factor": hi,
                                                         "original_max_position_embeddings": old}))
    yarns = (
        (64, 4.0, 4096, 10000.0, {}),
        (80, 8.0, 4096, 1000000.0, {"beta_fast": 16, "beta_slow": 2}),
        (128, 32.0, 4096, 150000.0, {"truncate": False, "beta_fast": 32, "beta_slow": 1}),
        (96, 40.0, 4096, 10000.0, {"mscale": 1.0, "mscale_all_dim": 0.707}),
        (112, 4.0, 2048, 10000.0, {"attention_factor": 1.2}),
    )
    for d, f, old, theta, more in yarns:
        cfg = llama(d, rope_theta=theta, max_position_embeddings=int(old * f),
                    rope_scaling={"rope_type": "yarn", "factor": f,
                                  "original_max_position_embeddings": old, **more})
        add(f"yarn x{f} head {d}{' ' + ','.join(more) if more else ''}", cfg,
            "llama.cpp = transformers (factor = max / original)")
    phis = (
        (96, 1.0, 4096, 131072, {}),
        (128, 0.75, 4096, 131072, {}),
        (80, 0.5, 8192, 65536, {"attention_factor": 1.1}),
    )
    for d, partial, old, max_pos, more in phis:
        n = int(d * partial) // 2
        cfg = phi3(d, partial, ramp_factors(n, 1.9, 3), ramp_factors(n, 40, 1.5), old, max_pos,
                   **more)
        conv = "llama.cpp: factors chosen by the engine's context"
        add(f"longrope short head {d} x{partial}", cfg, conv, old, old)
        add(f"longrope long head {d} x{partial}", cfg, conv, old + 1, old + 1)
    for d, local in ((256, 10000.0), (128, 10000.0)):
        cfg = llama(d, architectures=["Gemma3ForCausalLM"], model_type="gemma3_text",
                    rope_theta=1000000.0, rope_local_base_freq=local,
                    rope_scaling={"rope_type": "linear", "factor": 8.0},
                    max_position_embeddings=131072, hidden_activation="gelu_pytorch_tanh",
                    query_pre_attn_scalar=d, sliding_window=512)
        add(f"gemma3 global head {d}", cfg)
        add(f"gemma3 local head {d}", cfg, "transformers: rope_local_base_freq, unscaled",
            layer="local")
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "test/fixtures/rope/expectations.json"
    rows = []
    for name, cfg, convention, context, seq_len, layer in cases():
        dim = rotary_dim(cfg)
        if layer == "local":
            inv, att = rope_default({"rope_theta": cfg["rope_local_base_freq"]}, dim, None)
        else:
            kind = (cfg.get("rope_scaling") or {})
            kind = kind.get("rope_type") or kind.get("type") or "default"
            inv, att = INIT[kind](cfg, dim, seq_len)
        rows.append({
            "name": name, "convention": convention, "config": cfg, "layer": layer,
            "context": context, "rotary_dim": dim,
            "inv_freq": [float(x) for x in inv.tolist()], "attention_factor": float(att),
        })
    doc = {
        "produced_by": "scripts/rope_expectations.py (ports transformers' ROPE_INIT_FUNCTIONS "
                       "and Gemma 3's local base to float64 torch " + torch.__version__ + ")",
        "meaning": "per case: an HF config.json, the engine context (LongRoPE) and the layer "
                   "kind (Gemma 3), and the inverse frequencies of the rotated dims and the "
                   "attention factor transformers computes (or the named convention)",
        "cases": rows,
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {len(rows)} cases to {path}")


if __name__ == "__main__":
    main()
