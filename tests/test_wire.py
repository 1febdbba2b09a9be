"""The process boundary: plain data round-trips, everything else is refused."""

import base64
import json
import socket

import pytest
import torch

from grader.sandbox import wire


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
                                   torch.bool, torch.complex64, torch.complex128])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3, 4)])
def test_tensors_round_trip_bit_exact(dtype, shape):
    t = (torch.randn(shape) * 10).to(dtype)
    back = wire.decode(json.loads(json.dumps(wire.encode(t))))
    assert back.dtype == dtype and back.shape == t.shape
    assert torch.equal(back, t)


def test_meta_tensors_cross_without_data():
    doc = wire.encode(torch.empty(2, 3, device="meta", dtype=torch.float64))
    assert "data" not in doc["$tensor"]
    back = wire.decode(doc)
    assert back.device.type == "meta" and back.dtype == torch.float64 and back.shape == (2, 3)


def test_non_contiguous_and_subclass_tensors_are_flattened_to_plain_bytes():
    class Sneaky(torch.Tensor):
        pass

    base = torch.arange(6.0).reshape(2, 3).t()
    sneaky = base.as_subclass(Sneaky)
    back = wire.decode(wire.encode(sneaky))
    assert type(back) is torch.Tensor and torch.equal(back, base)


def test_conjugate_and_negative_views_cross_as_their_values():
    z = torch.tensor([1 + 2j, -3 - 4j], dtype=torch.complex64)
    for view in (z.conj(), z.conj().imag):  # a conjugate bit, then a negative one
        assert view.is_conj() or view.is_neg()
        back = wire.decode(wire.encode(view))
        assert torch.equal(back, view.resolve_conj().resolve_neg())


def test_containers_keep_their_shape():
    value = {"a": (1, 2.5, None, True), "b": [float("nan"), float("inf")], "c": "x"}
    back = wire.decode(json.loads(json.dumps(wire.encode(value), allow_nan=False)))
    assert back["a"] == (1, 2.5, None, True) and back["c"] == "x"
    assert back["b"][1] == float("inf") and back["b"][0] != back["b"][0]


def test_objects_become_handles_only_where_allowed():
    with pytest.raises(wire.WireError):
        wire.encode(object())
    doc = wire.encode(object(), to_handle=lambda obj: wire.Handle(7, "object"))
    assert wire.decode(doc) == wire.Handle(7, "object")


@pytest.mark.parametrize("doc, why", [
    ({"$pickle": "gASV"}, "unknown tag"),
    ({"$tensor": {"dtype": "object", "shape": [1], "data": ""}}, "dtype"),
    ({"$tensor": {"dtype": "float32", "shape": [4], "data": base64.b64encode(b"abc").decode()}}, "bytes"),
    ({"$tensor": {"dtype": "float32", "shape": [-1], "data": ""}}, "negative"),
    ({"$float": "1e999"}, "allowed"),
])
def test_garbage_is_refused(doc, why):
    with pytest.raises((wire.WireError, KeyError)):
        wire.decode(doc)


def test_frames_are_capped_and_must_be_json_objects():
    a, b = socket.socketpair()
    with a, b:
        wire.send_frame(a, {"x": 1})
        assert wire.recv_frame(b) == {"x": 1}
        a.sendall((100).to_bytes(4, "big"))
        with pytest.raises(wire.WireError, match="exceeds"):
            wire.recv_frame(b, max_bytes=10)
    a, b = socket.socketpair()
    with a, b:
        a.sendall((5).to_bytes(4, "big") + b"[1,2]")
        with pytest.raises(wire.WireError, match="object"):
            wire.recv_frame(b)
