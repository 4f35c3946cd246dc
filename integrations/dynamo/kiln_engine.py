"""Kiln as an NVIDIA Dynamo worker.

`KilnEngine` implements Dynamo's Python `LLMEngine` (`dynamo.common.backend`) over a Kiln
server's token-level endpoint (`deno task serve`: `GET /v1/engine/config`,
`POST /v1/engine/generate`, NDJSON chunks of Dynamo's own `LLMEngineOutput`), so Dynamo's
frontend and KV router drive Kiln like any other backend. Kiln's KV events reach the router
through `kv_event_sources()`: a `ZmqSource` on the endpoint given to `serve --kv-events`.

It follows both of Dynamo's Python backend APIs, found by what the installed `dynamo` offers,
never by its version string:

- 1.3: `EngineConfig` carries the token-pipeline fields itself (`context_length`,
  `kv_cache_block_size`, `total_kv_blocks`, ...), and the worker calls `drain()` before
  `cleanup()`.
- 1.5: those fields live in `EngineConfig(llm=LlmRegistration(...))`; the worker asks
  `is_quiescent()` instead of calling `drain()`, and calls `health_check_payload()`,
  `supported_controls()` / `engine_control()` and `on_endpoint_ready()`, each with a default.

It imports Dynamo only where Dynamo is installed; without it the class still works (a plain
base, a local `EngineConfig`, `KilnError` for typed errors), which is how it is tested (and,
with stand-in `dynamo` modules of each shape, how both APIs are).

    python -m kiln_engine --kiln-url http://127.0.0.1:8080 --kv-events tcp://127.0.0.1:5557 \\
        --namespace dynamo --component kiln --endpoint generate --model-name fortune
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import inspect
import json
import os
import uuid
from dataclasses import dataclass
from typing import Any, AsyncGenerator, Optional

import aiohttp

try:  # Dynamo's backend framework, when installed
    from dynamo.common.backend.engine import EngineConfig as DynamoEngineConfig
    from dynamo.common.backend.engine import LLMEngine as _Base

    HAVE_DYNAMO = True
except ImportError:  # the shim alone (tests, or a router other than Dynamo's)
    _Base = object
    DynamoEngineConfig = None
    HAVE_DYNAMO = False


@dataclass
class KilnEngineConfig:
    """The `EngineConfig` fields Kiln reports, where Dynamo's class is not installed."""

    model: str
    served_model_name: Optional[str] = None
    context_length: Optional[int] = None
    kv_cache_block_size: Optional[int] = None
    total_kv_blocks: Optional[int] = None
    max_num_seqs: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None


class KilnError(Exception):
    """A Kiln error, typed as Dynamo types errors (`InvalidArgument`, `EngineShutdown`, ...)."""

    def __init__(self, error_type: str, message: str):
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.message = message


def typed_error(error_type: str, message: str) -> Exception:
    """Dynamo's exception class for `error_type` where Dynamo is installed, else `KilnError`."""
    try:
        from dynamo.llm import exceptions as dx  # type: ignore

        cls = getattr(dx, error_type, None) or dx.Unknown
        return cls(message)
    except ImportError:
        return KilnError(error_type, message)


CONFIG_FIELDS = (
    "model",
    "served_model_name",
    "context_length",
    "kv_cache_block_size",
    "total_kv_blocks",
    "max_num_seqs",
    "max_num_batched_tokens",
)


def accepted_fields(cls: Any) -> set:
    """The keyword arguments `cls` takes: a dataclass's fields, else its signature's names."""
    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls)}
    try:
        return set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return set()


def registration_class() -> Any:
    """Dynamo 1.5's `LlmRegistration`, beside its `EngineConfig` or in the package."""
    try:
        from dynamo.common.backend.engine import LlmRegistration  # type: ignore
    except ImportError:
        from dynamo.common.backend import LlmRegistration  # type: ignore
    return LlmRegistration


def engine_config(wire: dict) -> Any:
    """Kiln's `EngineConfig` JSON as the installed Dynamo's class: the token-pipeline facts
    nested as `llm=LlmRegistration(...)` where that class takes `llm` (1.5), else flat (1.3).
    Kiln's JSON carries both forms; a fact the nested record lacks is taken from the flat one."""
    if DynamoEngineConfig is None:
        return KilnEngineConfig(**{k: wire.get(k) for k in CONFIG_FIELDS})
    accepted = accepted_fields(DynamoEngineConfig)
    if "llm" not in accepted:
        return DynamoEngineConfig(**{k: wire.get(k) for k in CONFIG_FIELDS if k in accepted})
    registration = registration_class()
    nested = wire.get("llm") or {}
    facts = {
        k: nested.get(k, wire.get(k))
        for k in accepted_fields(registration)
        if nested.get(k, wire.get(k)) is not None
    }
    extra = {
        k: wire[k]
        for k in ("served_model_name", "runtime_data", "model_aliases")
        if k in accepted and wire.get(k) is not None
    }
    return DynamoEngineConfig(model=wire["model"], llm=registration(**facts), **extra)


def health_check_payload_for(token_id: int = 0) -> dict:
    """The canary Dynamo sends through `generate()` to probe an idle worker: one prompt token,
    one greedy token out, marked `_HEALTH_CHECK`. Built by Dynamo's own helper where it has one
    (which applies `DYN_HEALTH_CHECK_PAYLOAD`), else in the same shape."""
    try:
        from dynamo.common.backend.health_check import build_health_check_payload  # type: ignore
    except ImportError:
        return {
            "token_ids": [token_id],
            "stop_conditions": {"max_tokens": 1, "ignore_eos": True},
            "sampling_options": {"temperature": 0.0},
            "_HEALTH_CHECK": True,
        }
    return build_health_check_payload(token_id)


def _request_id(context: Any) -> str:
    rid = getattr(context, "id", None)
    value = rid() if callable(rid) else rid
    return str(value) if value else uuid.uuid4().hex


def _stopped(context: Any) -> bool:
    is_stopped = getattr(context, "is_stopped", None)
    return bool(is_stopped()) if callable(is_stopped) else False


class KilnEngine(_Base):  # type: ignore[misc, valid-type]
    """Dynamo's `LLMEngine` over a Kiln server's token-level endpoint."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8080",
        api_key: Optional[str] = None,
        kv_events: Optional[str] = None,
        drain_timeout: float = 30.0,
    ):
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.kv_events = kv_events
        self.drain_timeout = drain_timeout
        self.config: Any = None
        self.endpoint: Any = None
        self._session: Optional[aiohttp.ClientSession] = None
        self._inflight: dict[str, aiohttp.ClientResponse] = {}

    @classmethod
    async def from_args(cls, argv: Optional[list[str]] = None):
        p = argparse.ArgumentParser(description="Kiln as a Dynamo worker")
        p.add_argument("--kiln-url", default="http://127.0.0.1:8080")
        p.add_argument("--api-key", default=os.environ.get("KILN_API_KEY"))
        p.add_argument("--kv-events", default=None, help="the endpoint of serve --kv-events")
        p.add_argument("--namespace", default="dynamo")
        p.add_argument("--component", default="kiln")
        p.add_argument("--endpoint", default="generate")
        p.add_argument("--model-name", default=None)
        a = p.parse_args(argv)
        engine = cls(a.kiln_url, a.api_key, a.kv_events)
        if not HAVE_DYNAMO:
            return engine, vars(a)
        from dynamo.common.backend.worker import WorkerConfig  # type: ignore

        name = a.model_name or "kiln"
        worker = WorkerConfig(
            namespace=a.namespace,
            component=a.component,
            endpoint=a.endpoint,
            model_name=name,
            served_model_name=name,
        )
        return engine, worker

    def _headers(self, extra: Optional[dict] = None) -> dict:
        h = dict(extra or {})
        if self.api_key:
            h["authorization"] = f"Bearer {self.api_key}"
        return h

    async def _raise_for(self, resp: aiohttp.ClientResponse) -> None:
        try:
            error = (await resp.json()).get("error", {})
        except Exception:
            error = {}
        error_type = error.get("code") or ("InvalidArgument" if resp.status < 500 else "Unknown")
        raise typed_error(error_type, error.get("message") or f"HTTP {resp.status}")

    async def start(self, worker_id: int = 0) -> Any:
        """Read the server's `EngineConfig` (`GET /v1/engine/config`)."""
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        async with self._session.get(f"{self.url}/v1/engine/config", headers=self._headers()) as r:
            if r.status != 200:
                await self._raise_for(r)
            self.config = engine_config(await r.json())
        return self.config

    # Older Dynamo releases call `init()` where newer ones call `start()`.
    async def init(self) -> Any:
        return await self.start()

    async def generate(self, request: dict, context: Any) -> AsyncGenerator[dict, None]:
        """Stream the request's chunks; closing the response cancels it in Kiln."""
        assert self._session is not None, "start() first"
        rid = _request_id(context)
        resp = await self._session.post(
            f"{self.url}/v1/engine/generate",
            data=json.dumps(request),
            headers=self._headers({"content-type": "application/json", "x-request-id": rid}),
        )
        if resp.status != 200:
            try:
                await self._raise_for(resp)
            finally:
                resp.release()
        self._inflight[rid] = resp
        try:
            async for line in resp.content:
                if not line.strip():
                    continue
                chunk = json.loads(line)
                chunk.setdefault("index", 0)
                yield chunk
                if chunk.get("finish_reason") is not None or _stopped(context):
                    break
        except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError):
            if not _stopped(context):
                raise typed_error("Disconnected", "the Kiln server closed the stream")
        finally:
            self._inflight.pop(rid, None)
            resp.close()  # drops the connection: Kiln cancels a request still running

    async def abort(self, context: Any) -> None:
        """Cancel a request in flight: its connection is closed, and Kiln frees its blocks."""
        resp = self._inflight.pop(_request_id(context), None)
        if resp is not None:
            resp.close()

    async def is_quiescent(self) -> Optional[bool]:
        """Dynamo 1.5: true when no request is in flight here (Kiln then holds no KV for us)."""
        return not self._inflight

    async def drain(self) -> None:
        """Dynamo 1.3: wait for the requests in flight to end (at most `drain_timeout` s)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.drain_timeout
        while self._inflight and loop.time() < deadline:
            await asyncio.sleep(0.05)

    async def health_check_payload(self) -> Optional[dict]:
        """Dynamo 1.5: a one-token probe of token 0 (a valid id in every vocabulary)."""
        return health_check_payload_for(0)

    def supported_controls(self) -> set:
        """Dynamo 1.5: none (Kiln's HTTP endpoint offers no engine control)."""
        return set()

    async def engine_control(self, control: str, body: dict) -> dict:
        """Dynamo 1.5: every control is refused by name, as Dynamo's default refuses it."""
        return {"status": "error", "message": f"unsupported engine control: {control}"}

    async def on_endpoint_ready(self, endpoint: Any) -> None:
        """Dynamo 1.5: keep the runtime's serving endpoint (for logs and callers)."""
        self.endpoint = endpoint

    async def kv_event_sources(self) -> list:
        """Kiln's KV events: its `serve --kv-events` socket, for Dynamo's ZMQ listener."""
        if not self.kv_events or not HAVE_DYNAMO:
            return []
        from dynamo.common.backend.publisher import ZmqSource  # type: ignore

        return [ZmqSource(endpoint=self.kv_events, dp_rank=0)]

    async def cleanup(self) -> None:
        for resp in list(self._inflight.values()):
            resp.close()
        self._inflight.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None


def main() -> None:
    from dynamo.common.backend.run import run  # type: ignore

    run(KilnEngine)


if __name__ == "__main__":
    main()
