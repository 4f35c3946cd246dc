"""Stand-in `dynamo` packages for testing the shim without Dynamo, one per shape of Dynamo's
Python backend API (`dynamo.common.backend`), written from what Dynamo's repository documents:

- "1.3": `EngineConfig` holds the token-pipeline fields itself; `LLMEngine` has `drain()`.
- "1.5": `EngineConfig(model, served_model_name, runtime_data, llm, model_aliases)` with those
  fields in `llm=LlmRegistration(...)`; `LLMEngine` drops `drain()` for `is_quiescent()` and adds
  `health_check_payload()`, `supported_controls()` / `engine_control()` and
  `on_endpoint_ready()`, each with a default; `health_check.build_health_check_payload`.

Both have `dynamo.llm.exceptions` (typed errors), `publisher.ZmqSource` and `worker.WorkerConfig`.
`install(shape)` puts one into `sys.modules`, before `kiln_engine` is imported.
"""
import abc
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Optional

ERROR_TYPES = (
    "Unknown", "InvalidArgument", "CannotConnect", "Disconnected", "ConnectionTimeout",
    "ResponseTimeout", "Cancelled", "ResourceExhausted", "EngineShutdown", "StreamIncomplete",
)


class DynamoException(Exception):
    """The base of the typed errors."""


@dataclass(frozen=True)
class ZmqSource:
    endpoint: str
    topic: str = ""
    dp_rank: int = 0


@dataclass
class WorkerConfig:
    namespace: str
    component: str = "backend"
    endpoint: str = "generate"
    model_name: str = ""
    served_model_name: Optional[str] = None


@dataclass
class EngineConfig13:
    model: str
    served_model_name: Optional[str] = None
    context_length: Optional[int] = None
    kv_cache_block_size: Optional[int] = None
    total_kv_blocks: Optional[int] = None
    max_num_seqs: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None


class LLMEngine13(abc.ABC):
    @classmethod
    @abc.abstractmethod
    async def from_args(cls, argv=None): ...

    @abc.abstractmethod
    async def start(self): ...

    @abc.abstractmethod
    async def generate(self, request, context): ...

    async def abort(self, context) -> None:
        return None

    async def drain(self) -> None:
        return None

    @abc.abstractmethod
    async def cleanup(self) -> None: ...


@dataclass
class LlmRegistration:
    context_length: Optional[int] = None
    kv_cache_block_size: Optional[int] = None
    total_kv_blocks: Optional[int] = None
    max_num_seqs: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None
    data_parallel_size: Optional[int] = None
    data_parallel_start_rank: Optional[int] = None
    bootstrap_host: Optional[str] = None
    bootstrap_port: Optional[int] = None


@dataclass
class EngineConfig15:
    model: str
    served_model_name: Optional[str] = None
    runtime_data: Optional[dict] = None
    llm: Optional[LlmRegistration] = None
    model_aliases: list = field(default_factory=list)


class LLMEngine15(abc.ABC):
    @classmethod
    @abc.abstractmethod
    async def from_args(cls, argv=None): ...

    @abc.abstractmethod
    async def start(self, worker_id: int): ...

    @abc.abstractmethod
    async def generate(self, request, context): ...

    async def abort(self, context) -> None:
        return None

    async def is_quiescent(self) -> Optional[bool]:
        return None

    @abc.abstractmethod
    async def cleanup(self) -> None: ...

    async def health_check_payload(self) -> Optional[dict]:
        return None

    def supported_controls(self) -> set:
        return set()

    async def engine_control(self, control: str, body: dict) -> dict:
        return {"status": "error", "message": f"no control {control}"}

    async def on_endpoint_ready(self, endpoint) -> None:
        return None


def build_health_check_payload(bos_token_id: int, *, extras: Optional[dict] = None) -> dict:
    payload: dict[str, Any] = {
        "token_ids": [bos_token_id],
        "stop_conditions": {"max_tokens": 1, "ignore_eos": True},
        "sampling_options": {"temperature": 0.0},
        **(extras or {}),
    }
    payload["_HEALTH_CHECK"] = True
    return payload


def _module(name: str, **attrs) -> types.ModuleType:
    """A module `name` in `sys.modules`, an attribute of its parent, with `attrs`."""
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    m.__path__ = []  # importable as a package too
    sys.modules[name] = m
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, m)
    return m


def install(shape: str) -> types.SimpleNamespace:
    """Put a stand-in `dynamo` of `shape` ("1.3" or "1.5") into `sys.modules`."""
    new = shape == "1.5"
    exceptions = {t: type(t, (DynamoException,), {}) for t in ERROR_TYPES}
    config, base = (EngineConfig15, LLMEngine15) if new else (EngineConfig13, LLMEngine13)
    engine = dict(EngineConfig=config, LLMEngine=base)
    if new:
        engine["LlmRegistration"] = LlmRegistration
    _module("dynamo")
    _module("dynamo.llm")
    _module("dynamo.llm.exceptions", DynamoException=DynamoException, **exceptions)
    _module("dynamo.common")
    _module("dynamo.common.backend", WorkerConfig=WorkerConfig, **engine)
    _module("dynamo.common.backend.engine", **engine)
    _module("dynamo.common.backend.publisher", ZmqSource=ZmqSource)
    _module("dynamo.common.backend.worker", WorkerConfig=WorkerConfig)
    if new:
        _module(
            "dynamo.common.backend.health_check",
            build_health_check_payload=build_health_check_payload,
        )
    return types.SimpleNamespace(exceptions=exceptions, ZmqSource=ZmqSource, **engine)
