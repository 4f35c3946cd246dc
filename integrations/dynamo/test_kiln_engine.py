"""Drive `KilnEngine` as Dynamo's worker would, against a live `serve`, without Dynamo.

Checks the contract's rules on every stream: chunks carry `token_ids` and `index`, exactly one
carries `finish_reason` and it is the last, with `completion_usage`; concurrent requests; a
request cancelled midway (the context stops, `abort` is called) ends and Kiln frees it (its
`vllm:num_requests_running` gauge goes back to 0); a token id past the vocabulary is a typed
`InvalidArgument`; `drain`, `is_quiescent` and `cleanup`. Prints one JSON line of results and
exits non-zero on the first failure.

    /usr/bin/python3 integrations/dynamo/test_kiln_engine.py --url http://127.0.0.1:8080
"""
import argparse
import asyncio
import json
import re
import sys
import time
import uuid

import aiohttp

from kiln_engine import KilnEngine, KilnError


class Context:
    """What Dynamo's `Context` offers a backend: an id, and whether the request was stopped."""

    def __init__(self):
        self._id = uuid.uuid4().hex
        self._stopped = False

    def id(self):
        return self._id

    def is_stopped(self):
        return self._stopped

    def stop_generating(self):
        self._stopped = True


def check_stream(chunks, max_tokens=None):
    assert chunks, "no chunk"
    for c in chunks:
        assert isinstance(c["token_ids"], list), c
        assert c["index"] == 0, c
    finals = [i for i, c in enumerate(chunks) if c.get("finish_reason") is not None]
    assert finals == [len(chunks) - 1], f"one terminal chunk, last: {finals} of {len(chunks)}"
    usage = chunks[-1]["completion_usage"]
    tokens = sum(len(c["token_ids"]) for c in chunks)
    assert usage["completion_tokens"] == tokens, (usage, tokens)
    if max_tokens is not None:
        assert tokens == max_tokens and chunks[-1]["finish_reason"] == "length", chunks[-1]
    return tokens


def request(prompt, max_tokens, **extra):
    return {
        "token_ids": [256, *prompt.encode()],
        "stop_conditions": {"max_tokens": max_tokens, "ignore_eos": True},
        "sampling_options": {"temperature": 0},
        "output_options": {},
        **extra,
    }


async def collect(engine, req, ctx=None):
    return [c async for c in engine.generate(req, ctx or Context())]


async def running(url):
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{url}/metrics") as r:
            text = await r.text()
    m = re.search(r"^vllm:num_requests_running\{[^}]*\} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    a = p.parse_args()
    out = {}
    engine = KilnEngine(a.url)
    config = await engine.start(0)
    assert config.model == "fortune" and config.total_kv_blocks > 0, config
    assert config.kv_cache_block_size == 16 and config.context_length > 0, config
    out["config"] = {"model": config.model, "total_kv_blocks": config.total_kv_blocks}

    # One stream, then four at once: each keeps the contract's rules.
    out["tokens"] = check_stream(await collect(engine, request("The fortune", 12)), 12)
    many = await asyncio.gather(*(collect(engine, request(f"Stream {i}", 8 + i)) for i in range(4)))
    out["concurrent"] = [check_stream(c, 8 + i) for i, c in enumerate(many)]

    # Cancelled midway, as Dynamo's worker cancels: the context stops, then abort().
    ctx = Context()
    got = []
    gen = engine.generate(request("A long one", 900), ctx)
    async for c in gen:
        got.append(c)
        if len(got) == 3:
            ctx.stop_generating()
            await engine.abort(ctx)
    assert 3 <= len(got) < 900, len(got)
    assert engine.is_quiescent(), "nothing in flight after the abort"
    deadline = time.monotonic() + 5
    while (await running(a.url)) != 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert await running(a.url) == 0, "Kiln still runs the cancelled request"
    out["cancelled_after"] = len(got)

    # A token past the vocabulary: a typed error, and the server goes on serving.
    try:
        await collect(engine, {"token_ids": [1, 10**6], "stop_conditions": {"max_tokens": 2}})
        raise AssertionError("a token id past the vocabulary was accepted")
    except KilnError as e:
        assert e.error_type == "InvalidArgument", e
        out["bad_token"] = e.error_type
    check_stream(await collect(engine, request("Still here", 3)), 3)

    await engine.drain()
    assert engine.is_quiescent()
    await engine.cleanup()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr, flush=True)
        raise
