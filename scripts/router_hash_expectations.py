#!/usr/bin/env python3
"""Writes test/fixtures/router_hash/expectations.json: Dynamo's KV-router block hashes for a few
token sequences, computed with Debian's python3-xxhash (the xxHash C library's XXH3-64), not with
Kiln's TypeScript. The scheme, as Dynamo documents it for its KV router: a block's local hash is
XXH3-64, seed 1337, of its token ids as little-endian u32s; the first block's chained hash is its
local hash; each later one is XXH3-64, seed 1337, of the parent's chained hash and the block's local
hash as two little-endian u64s. src/engines/router_hash_test.ts holds Kiln's hashes to these.

Run: /usr/bin/python3 scripts/router_hash_expectations.py
"""
import json
import os
import random
import struct

import xxhash

SEED = 1337


def local(tokens):
    return xxhash.xxh3_64_intdigest(struct.pack("<%dI" % len(tokens), *tokens), seed=SEED)


def chained(tokens, block):
    out, parent = [], None
    for i in range(0, len(tokens) - block + 1, block):
        h = local(tokens[i:i + block])
        if parent is not None:
            h = xxhash.xxh3_64_intdigest(struct.pack("<QQ", parent, h), seed=SEED)
        out.append(h)
        parent = h
    return out


def main():
    rng = random.Random(39)
    cases = [
        {"block_size": 4, "tokens": [1, 2, 3, 4, 5, 6, 7, 8, 9]},
        {"block_size": 16, "tokens": list(range(40))},
        {"block_size": 3, "tokens": [0, 4294967295, 65536, 255, 256, 1, 2]},
        {"block_size": 32, "tokens": [rng.randrange(0, 152064) for _ in range(100)]},
        {"block_size": 1, "tokens": [7, 7, 7]},
    ]
    for c in cases:
        c["hashes"] = [str(h) for h in chained(c["tokens"], c["block_size"])]
    out = {
        "produced_by": "scripts/router_hash_expectations.py (python3-xxhash %s)" % xxhash.VERSION,
        "scheme": "XXH3-64 seed 1337; local = over u32 LE token ids; chained = over (parent, local) as two u64 LE",
        "hashes": "decimal strings of u64",
        "cases": cases,
    }
    path = os.path.join(os.path.dirname(__file__), "..", "test", "fixtures", "router_hash", "expectations.json")
    with open(path, "w") as f:
        # One line per case, so the file stays small and readable.
        head = {k: v for k, v in out.items() if k != "cases"}
        body = json.dumps(head, indent=1)[:-2]
        f.write(body + ',\n "cases": [\n')
        f.write(",\n".join("  " + json.dumps(c) for c in out["cases"]))
        f.write("\n ]\n}\n")


if __name__ == "__main__":
    main()
