#!/usr/bin/env python3
"""Decode KV event batches with Debian's python3-msgpack, as a Python consumer would.

Reads JSON lines from stdin, each `{"name": ..., "payload": "<hex>"}` (a batch's msgpack
payload), and prints one JSON line per batch: how it was laid out (`batch` and `event`: `list`
or `dict`) and what it says, read by field name from a map or by position from an array, with
block hashes as decimal strings (a u64 is exact that way):

    {"name": ..., "batch": "list", "event": "dict", "ts": 1.5, "dp_rank": 0,
     "events": [{"type": "BlockStored", "block_hashes": ["..."], "parent_block_hash": null,
                 "token_ids": [...], "block_size": 16, "lora_id": null}, ...]}
"""
import json
import sys

import msgpack

POSITIONS = {
    "BlockStored": (
        "type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id",
        "medium",
    ),
    "BlockRemoved": ("type", "block_hashes", "medium"),
    "AllBlocksCleared": ("type",),
}


def by_name(event):
    if isinstance(event, dict):
        return event
    return dict(zip(POSITIONS[event[0]], event))


def hashes(values):
    for h in values:
        if not isinstance(h, int) or h < 0 or h >= 2**64:
            raise ValueError(f"not a u64 block hash: {h!r}")
    return [str(h) for h in values]


def normalize(event):
    e = by_name(event)
    out = {"type": e["type"]}
    if e["type"] == "BlockStored":
        parent = e["parent_block_hash"]
        out.update(
            block_hashes=hashes(e["block_hashes"]),
            parent_block_hash=None if parent is None else hashes([parent])[0],
            token_ids=e["token_ids"],
            block_size=e["block_size"],
            lora_id=e.get("lora_id"),
        )
    elif e["type"] == "BlockRemoved":
        out.update(block_hashes=hashes(e["block_hashes"]))
    return out


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        item = json.loads(line)
        batch = msgpack.unpackb(bytes.fromhex(item["payload"]), raw=False)
        if isinstance(batch, dict):
            ts, events, dp_rank = batch["ts"], batch["events"], batch.get("data_parallel_rank")
        else:
            ts, events, dp_rank = batch[0], batch[1], batch[2] if len(batch) > 2 else None
        print(json.dumps({
            "name": item["name"],
            "batch": type(batch).__name__,
            "event": sorted({type(e).__name__ for e in events}),
            "ts": ts,
            "dp_rank": dp_rank,
            "events": [normalize(e) for e in events],
        }), flush=True)


if __name__ == "__main__":
    main()
