"""The only format that crosses between the grader and a student's child process.

Frames are a 4-byte big-endian length followed by UTF-8 JSON. Values are plain data:
None, bool, int, float, str, lists, dicts with str keys, and tagged objects:

    {"$tensor": {"dtype": "float32", "shape": [2, 3], "device": "cpu", "data": "<base64>"}}
    {"$tuple": [...]}                 tuples stay tuples
    {"$float": "nan" | "inf" | "-inf"}
    {"$handle": 3, "type": "MultiHeadSelfAttention"}   an object that stays in the child
    {"$dtype": "float64"} / {"$device": "cuda:0"}

Framing lives in `frames` (no torch needed to start a sandbox). Nothing is ever
unpickled: decoding builds tensors with `torch.frombuffer` from raw bytes and refuses
anything it does not know. Sizes are capped on the reading side.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from grader.sandbox.frames import MAX_FRAME_BYTES, WIRE_VERSION, WireError, recv_frame, send_frame

MAX_DEPTH = 32

_DTYPES: dict[str, torch.dtype] = {
    name: getattr(torch, name)
    for name in (
        "float64", "float32", "float16", "bfloat16", "int64", "int32",
        "int16", "int8", "uint8", "bool", "complex64", "complex128",
    )
}
_DTYPE_NAMES = tuple(_DTYPES)
_ITEMSIZE = {name: torch.empty((), dtype=dtype).element_size() for name, dtype in _DTYPES.items()}
_NOT_IN_NUMPY = {torch.bfloat16}


@dataclass(frozen=True)
class Handle:
    """A reference to an object that lives in the child."""

    id: int
    type_name: str


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def encode(value: Any, to_handle: Callable[[Any], Handle] | None = None) -> Any:
    """Turn a value into JSON-ready plain data; objects become handles (child side)."""
    return _encode(value, to_handle, 0)


def _encode(value: Any, to_handle: Callable[[Any], Handle] | None, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if value is None or isinstance(value, (bool, int, str)):
        return value if not isinstance(value, int) or isinstance(value, bool) else int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else {"$float": str(value)}
    if isinstance(value, torch.Tensor):
        return {"$tensor": _encode_tensor(value)}
    if isinstance(value, Handle):
        return {"$handle": value.id, "type": value.type_name}
    if isinstance(value, torch.dtype):
        return {"$dtype": dtype_name(value)}
    if isinstance(value, torch.device):
        return {"$device": str(value)}
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v, to_handle, depth + 1) for v in value]}
    if isinstance(value, list):
        return [_encode(v, to_handle, depth + 1) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"$dict": {k: _encode(v, to_handle, depth + 1) for k, v in value.items()}}
    if to_handle is not None:
        h = to_handle(value)
        return {"$handle": h.id, "type": h.type_name}
    raise WireError(f"cannot send a {type(value).__name__} across the process boundary")


def _encode_tensor(t: torch.Tensor) -> dict[str, Any]:
    if type(t) is not torch.Tensor:  # a subclass (or __torch_function__ tricks): its bytes only
        with torch._C.DisableTorchFunctionSubclass():
            t = t.as_subclass(torch.Tensor)
    plain, device = t.detach(), t.device
    doc: dict[str, Any] = {"dtype": dtype_name(plain.dtype), "shape": list(plain.shape), "device": str(device)}
    if device.type != "meta":
        doc["data"] = base64.b64encode(_raw_bytes(plain)).decode("ascii")
    return doc


def _raw_bytes(t: torch.Tensor) -> bytes:
    """The elements in C order, as bytes (a conjugate or negative view resolved first)."""
    if not t.numel():
        return b""
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    t = t.to("cpu").contiguous()  # no copy where it already is
    if t.dtype in _NOT_IN_NUMPY:
        t = t.reshape(-1).view(torch.uint8)
    return t.numpy().tobytes()


def decode(value: Any, from_handle: Callable[[Handle], Any] | None = None,
           device_map: Callable[[str], str] | None = None) -> Any:
    """Inverse of `encode`; `from_handle` resolves handles (child side) or wraps them."""
    return _decode(value, from_handle, device_map, 0)


def _decode(value: Any, from_handle: Any, device_map: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_decode(v, from_handle, device_map, depth + 1) for v in value]
    if not isinstance(value, dict) or len(value) == 0:
        raise WireError(f"unexpected {type(value).__name__} on the wire")
    if "$tensor" in value:
        return _decode_tensor(value["$tensor"], device_map)
    if "$tuple" in value:
        return tuple(_decode(v, from_handle, device_map, depth + 1) for v in value["$tuple"])
    if "$dict" in value:
        return {str(k): _decode(v, from_handle, device_map, depth + 1) for k, v in value["$dict"].items()}
    if "$float" in value:
        return float(_checked(value["$float"], ("nan", "inf", "-inf")))
    if "$dtype" in value:
        return _DTYPES[_checked(value["$dtype"], _DTYPE_NAMES)]
    if "$device" in value:
        return torch.device(str(value["$device"]))
    if "$handle" in value:
        h = Handle(int(value["$handle"]), str(value.get("type", "object")))
        return from_handle(h) if from_handle else h
    raise WireError(f"unknown tag {sorted(value)[:3]}")


def _checked(value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise WireError(f"{value!r} is not one of the allowed values")
    return str(value)


def _decode_tensor(doc: dict[str, Any], device_map: Callable[[str], str] | None) -> torch.Tensor:
    name = _checked(doc.get("dtype"), _DTYPE_NAMES)
    dtype = _DTYPES[name]
    shape = [int(s) for s in doc.get("shape", [])]
    if any(s < 0 for s in shape):
        raise WireError("negative tensor dimension")
    device = str(doc.get("device", "cpu"))
    if device_map is not None:
        device = device_map(device)
    if device.startswith("meta"):
        return torch.empty(shape, dtype=dtype, device="meta")
    raw = base64.b64decode(doc.get("data", ""), validate=True)
    numel = math.prod(shape)
    itemsize = _ITEMSIZE[name]
    if len(raw) != numel * itemsize:
        raise WireError(f"tensor data is {len(raw)} bytes, shape {shape} needs {numel * itemsize}")
    if numel == 0:
        t = torch.empty(shape, dtype=dtype)
    else:
        t = torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape)
    return t if device == "cpu" else t.to(device)


__all__ = ["Handle", "MAX_FRAME_BYTES", "WIRE_VERSION", "WireError", "decode", "dtype_name", "encode",
           "recv_frame", "send_frame"]
