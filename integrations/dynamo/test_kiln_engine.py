"""Drive `KilnEngine` as Dynamo's worker would, against a live `serve`, with or without Dynamo.

`--dynamo none` runs the shim alone; `--dynamo 1.3` and `--dynamo 1.5` first install a
stand-in `dynamo` package of that API shape (`fake_dynamo.py`) and drive the shim as that
shape's worker does: 1.3 reads the flat `EngineConfig` fields and calls `drain()` before
`cleanup()`; 1.5 reads `config.llm`, sends the `health_check_payload()` through `generate()`,
calls `on_endpoint_ready()`, `supported_controls()` and `engine_control()`, and asks
`is_quiescent()` instead of draining.

Every shape checks the contract's rules on every stream: chunks carry `token_ids` and `index`,
exactly one carries `finish_reason` and it is the last, with `completion_usage`; concurrent
requests; a request cancelled midway (the context stops, `abort` is called) ends and Kiln frees
it (its `vllm:num_requests_running` gauge goes back to 0), and is not quiescent while it runs; a
token id past the vocabulary is a typed `InvalidArgument`; `cleanup`. Prints one JSON line of
results and exits non-zero on the first failure.

    /usr/bin/python3 integrations/dynamo/test_kiln_engine.py --url http://127.0.0.1:8080 \\
        [--dynamo none|1.3|1.5]
"""
import argparse
import asyncio
import json
import re
import sys
import time
import uuid

import aiohttp

import fake_dynamo

LLM_FIELDS = (
    "context_length", "kv_cache_block_size", "total_kv_blocks", "max_num_seqs",
    "max_num_batched_tokens", "data_parallel_size", "data_parallel_start_rank",
)
KV_EVENTS = "tcp://127.0.0.1:5557"


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


def registered(config, shape):
    """The token-pipeline facts, read from `config` the way `shape`'s worker reads them."""
    if shape == "1.5":
        assert not hasattr(config, "total_kv_blocks"), "1.5 has no flat fields"
        return {k: getattr(config.llm, k) for k in LLM_FIELDS}
    return {k: getattr(config, k, None) for k in LLM_FIELDS}


def error_type(e):
    """`KilnError`'s type, or the class name of Dynamo's typed exception."""
    return getattr(e, "error_type", type(e).__name__)


async def lifecycle_15(engine, out):
    """What a 1.5 worker calls besides generate(): the probe (Dynamo's helper builds it where
    installed, the shim itself without Dynamo), the endpoint, the controls."""
    probe = await engine.health_check_payload()
    assert probe["_HEALTH_CHECK"] is True and probe["token_ids"] == [0], probe
    out["probe_tokens"] = check_stream(await collect(engine, probe), 1)
    await engine.on_endpoint_ready("dynamo.kiln.generate")
    assert engine.endpoint == "dynamo.kiln.generate"
    assert engine.supported_controls() == set()
    answer = await engine.engine_control("clear_kv_blocks", {})
    assert answer["status"] == "error" and "clear_kv_blocks" in answer["message"], answer
    out["control"] = answer["status"]


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--dynamo", choices=["none", "1.3", "1.5"], default="none")
    a = p.parse_args()
    fake = fake_dynamo.install(a.dynamo) if a.dynamo != "none" else None
    import kiln_engine  # after the stand-in `dynamo`, which it looks for on import

    out = {"dynamo": a.dynamo}
    engine = kiln_engine.KilnEngine(a.url, kv_events=KV_EVENTS)
    if fake is not None:
        assert isinstance(engine, fake.LLMEngine), "the shim is the installed API's LLMEngine"
    config = await (engine.start(0) if a.dynamo == "1.5" else engine.start())
    facts = registered(config, a.dynamo)
    assert config.model == "fortune" and facts["total_kv_blocks"] > 0, config
    assert facts["kv_cache_block_size"] == 16 and facts["context_length"] > 0, config
    out["config"] = {"model": config.model, **facts}
    if a.dynamo != "1.3":  # without Dynamo too: the probe then is the shim's own
        await lifecycle_15(engine, out)

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
        if len(got) == 1:
            assert await engine.is_quiescent() is False, "a request is in flight"
        if len(got) == 3:
            ctx.stop_generating()
            await engine.abort(ctx)
    assert 3 <= len(got) < 900, len(got)
    assert await engine.is_quiescent() is True, "nothing in flight after the abort"
    deadline = time.monotonic() + 5
    while (await running(a.url)) != 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert await running(a.url) == 0, "Kiln still runs the cancelled request"
    out["cancelled_after"] = len(got)

    # A token past the vocabulary: a typed error, and the server goes on serving.
    try:
        await collect(engine, {"token_ids": [1, 10**6], "stop_conditions": {"max_tokens": 2}})
        raise AssertionError("a token id past the vocabulary was accepted")
    except AssertionError:
        raise
    except Exception as e:
        want = fake.exceptions["InvalidArgument"] if fake else kiln_engine.KilnError
        assert isinstance(e, want), repr(e)
        out["bad_token"] = error_type(e)
    check_stream(await collect(engine, request("Still here", 3)), 3)

    sources = await engine.kv_event_sources()
    out["kv_sources"] = [[s.endpoint, s.dp_rank] for s in sources]
    if a.dynamo == "1.3":
        await engine.drain()  # 1.3's worker drains; 1.5's asks is_quiescent() instead
    assert await engine.is_quiescent() is True
    await engine.cleanup()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr, flush=True)
        raise
