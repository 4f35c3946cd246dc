#!/usr/bin/env python3
"""An independent KV event subscriber, as a KV-aware router would run one.

Connects a SUB socket to a Kiln server's `--kv-events` endpoint, asks its replay socket for
every batch from sequence 0 (so a late subscriber starts from the beginning), then follows the
live stream. Each batch is vLLM's framing: topic, 8-byte big-endian sequence number, msgpack
`[ts, [events], dp_rank]` with each event a tagged array, or with each a map of its field names
tagged by `type`, or the batch itself such a map (`{ts, events, data_parallel_rank}`). It rebuilds the set of cached blocks from BlockStored, BlockRemoved
and AllBlocksCleared, and checks every stored block's hash against Dynamo's router hashing
(XXH3-64, seed 1337, over the block's u32 little-endian tokens, chained with the parent's hash),
with python3-xxhash.

Prints `ready` once connected; on stdin, `done N` says N batches were published in all (it
drains to batch N - 1), or `done` alone that the publisher has gone quiet (it drains until no
batch has come for half a second). Then it prints one JSON line: the block set and what it found
(with `layouts`, how the batches and their events were laid out: `list/list`, `dict/dict`, ...).

    kv_subscriber.py --endpoint tcp://127.0.0.1:5557 --replay tcp://127.0.0.1:5558
                     [--exit-after K]   (leave after K live batches: a subscriber that goes away)
"""
import argparse
import json
import struct
import sys
import threading
import time

import msgpack
import xxhash
import zmq

SEED = 1337
END = -1


def local_hash(tokens):
    return xxhash.xxh3_64_intdigest(struct.pack(f"<{len(tokens)}I", *tokens), seed=SEED)


def chain(parent, tokens):
    h = local_hash(tokens)
    if parent is None:
        return h
    return xxhash.xxh3_64_intdigest(struct.pack("<QQ", parent, h), seed=SEED)


POSITIONS = {
    "BlockStored": ("type", "block_hashes", "parent_block_hash", "token_ids", "block_size"),
    "BlockRemoved": ("type", "block_hashes"),
}


def fields(event):
    """An event's fields by name, from its tagged map or its tagged array."""
    if isinstance(event, dict):
        return event
    return dict(zip(POSITIONS.get(event[0], ("type",)), event))


def unpack_batch(payload, layouts):
    """A batch's (ts, events, dp_rank), from its positional array or its map; adds to `layouts`
    how the batch and its events were laid out (`list/list`, `dict/dict`, ...)."""
    batch = msgpack.unpackb(payload, raw=False)
    if isinstance(batch, dict):
        ts, events, dp_rank = batch["ts"], batch["events"], batch.get("data_parallel_rank")
    else:
        ts, events, dp_rank = batch[0], batch[1], batch[2] if len(batch) > 2 else None
    for e in events:
        layouts.add(f"{type(batch).__name__}/{type(e).__name__}")
    return ts, events, dp_rank


class Rebuilt:
    def __init__(self):
        self.blocks = {}
        self.events = 0
        self.mismatches = []
        self.unknown_removals = 0
        self.dp_ranks = set()
        self.layouts = set()

    def apply(self, payload):
        ts, events, dp_rank = unpack_batch(payload, self.layouts)
        self.dp_ranks.add(dp_rank)
        for raw in events:
            self.events += 1
            e = fields(raw)
            tag = e["type"]
            if tag == "BlockStored":
                hashes, parent = e["block_hashes"], e["parent_block_hash"]
                tokens, block_size = e["token_ids"], e["block_size"]
                for i, h in enumerate(hashes):
                    want = chain(parent, tokens[i * block_size:(i + 1) * block_size])
                    if want != h:
                        self.mismatches.append([str(h), str(want)])
                    self.blocks[h] = parent
                    parent = h
            elif tag == "BlockRemoved":
                for h in e["block_hashes"]:
                    if h in self.blocks:
                        del self.blocks[h]
                    else:
                        self.unknown_removals += 1
            elif tag == "AllBlocksCleared":
                self.blocks.clear()
            else:
                raise ValueError(f"unknown event {tag!r}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint", required=True)
    p.add_argument("--replay", required=True)
    p.add_argument("--exit-after", type=int, default=None)
    a = p.parse_args()

    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(a.endpoint)
    time.sleep(0.3)  # let the subscription reach the publisher before asking for the past
    print("ready", flush=True)

    done = {"total": None}

    def read_stdin():
        for line in sys.stdin:
            if line.startswith("done"):
                parts = line.split()
                done["total"] = int(parts[1]) if len(parts) > 1 else -1
                return

    threading.Thread(target=read_stdin, daemon=True).start()

    state = Rebuilt()
    next_seq = 0
    live_gaps = 0
    duplicates = 0
    replayed = 0
    live = 0
    first_live = last_live = None

    def replay_from(start):
        nonlocal next_seq, replayed
        req = ctx.socket(zmq.DEALER)
        req.connect(a.replay)
        req.send_multipart([b"", struct.pack(">q", start)])
        while True:
            _, seq_bytes, payload = req.recv_multipart()
            seq = struct.unpack(">q", seq_bytes)[0]
            if seq == END:
                break
            if seq == next_seq:
                state.apply(payload)
                next_seq += 1
                replayed += 1
        req.close(0)

    replay_from(0)
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    quiet_since = time.monotonic()
    while True:
        total = done["total"]
        if total is not None and total >= 0 and next_seq >= total:
            break
        if not poller.poll(100):
            if total == -1 and time.monotonic() - quiet_since > 0.5:
                break
            continue
        quiet_since = time.monotonic()
        topic, seq_bytes, payload = sub.recv_multipart()
        seq = struct.unpack(">q", seq_bytes)[0]
        now = time.monotonic()
        first_live = first_live if first_live is not None else now
        last_live = now
        if seq < next_seq:
            duplicates += 1  # already had it from the replay
            continue
        if seq > next_seq:
            live_gaps += 1
            replay_from(next_seq)
            if seq < next_seq:
                continue
        state.apply(payload)
        next_seq += 1
        live += 1
        if a.exit_after is not None and live >= a.exit_after:
            break

    print(json.dumps({
        "batches": next_seq,
        "events": state.events,
        "blocks": sorted(str(h) for h in state.blocks),
        "mismatches": state.mismatches[:10],
        "unknown_removals": state.unknown_removals,
        "live_gaps": live_gaps,
        "duplicates": duplicates,
        "replayed": replayed,
        "live_batches": live,
        "live_seconds": (last_live - first_live) if first_live is not None else 0,
        "dp_ranks": sorted(r for r in state.dp_ranks if r is not None),
        "layouts": sorted(state.layouts),
    }), flush=True)
    sub.close(0)
    ctx.term()


if __name__ == "__main__":
    main()
