"""Writes into objects implemented in C that the traced code reaches through globals, closures
and default arguments (``array.array``, ``bytearray``, ``memoryview``, ``mmap``, ``socket``):
refused with the object, the method and the line, before anything is written; pure reads
give eager's values. A deque is a tracked container: its writes are made on every call."""

from __future__ import annotations

import array
import collections
import mmap
import socket

import pytest
import torch

import thunder

A = array.array("i", [1, 2])
B = bytearray(b"ab")
D = collections.deque(maxlen=3)


def _append_to_array(x):
    A.append(3)
    return x * 2


def _set_array_item(x):
    A[0] = 7
    return x * 2


def _extend_bytearray(x):
    B.extend(b"cd")
    return x * 2


def _write_through_a_view(x):
    memoryview(B)[0] = 65  # (C code writing into the buffer, no method of B called)
    return x * 2


@pytest.mark.parametrize(
    ("fn", "what"),
    [
        (_append_to_array, r"array\.array object the global A \(append\)"),
        (_set_array_item, r"array\.array object the global A \(__setitem__\)"),
        (_extend_bytearray, r"bytearray object the global B \(extend\)"),
    ],
)
def test_a_write_into_a_global_array_is_refused_with_the_line(fn, what):
    jf = thunder.jit(fn)
    for _ in range(3):
        with pytest.raises(Exception, match=what + r"(.|\n)*test_c_object_writes.py:\d+ in _"):
            jf(torch.ones(2))
        assert A == array.array("i", [1, 2]) and B == bytearray(b"ab")


def test_a_write_through_the_buffer_is_refused_and_not_made():
    with pytest.raises(Exception, match=r"bytearray object the global B \(written through its buffer\)"):
        thunder.jit(_write_through_a_view)(torch.ones(2))
    assert B == bytearray(b"ab")


def test_closures_and_default_arguments_are_refused_too():
    buf = array.array("d")

    def f(x):
        buf.extend([1.0, 2.0])
        return x + 1

    def g(x, out=bytearray()):  # noqa: B008 - the mutable default is the point
        out += b"z"
        return x + 1

    with pytest.raises(Exception, match=r"array\.array object the closure variable buf \(extend\)"):
        thunder.jit(f)(torch.ones(2))
    with pytest.raises(Exception, match=r"bytearray object a default argument of .*g \(__iadd__\)"):
        thunder.jit(g)(torch.ones(2))
    assert len(buf) == 0 and g.__defaults__ == (bytearray(),)


def test_pure_reads_give_eager_s_values():
    def f(x):
        return x * A[1] * len(B) + len(A) + bytes(B)[0] + torch.frombuffer(B, dtype=torch.uint8).sum()

    jf = thunder.jit(f)
    for i in range(3):
        torch.testing.assert_close(jf(torch.ones(2) * i), f(torch.ones(2) * i))
    assert A == array.array("i", [1, 2]) and B == bytearray(b"ab")


def test_a_socket_send_is_refused_before_it_is_made():
    reader, writer = socket.socketpair()
    try:

        def f(x):
            writer.sendall(b"step")
            return x * 2

        with pytest.raises(Exception, match=r"socket object the closure variable writer \(sendall\)"):
            thunder.jit(f)(torch.ones(2))
        reader.setblocking(False)
        with pytest.raises(BlockingIOError):
            reader.recv(16)  # nothing was sent
    finally:
        reader.close()
        writer.close()


def test_mmap_writes_and_content_reads_are_refused():
    m = mmap.mmap(-1, 8)
    m[:2] = b"ab"

    def write(x):
        m.write(b"zz")
        return x

    def set_item(x):
        m[0:1] = b"q"
        return x

    def read(x):
        return x * m[1] + len(m)

    def size(x):
        return x * len(m) + int(m.closed)

    try:
        with pytest.raises(Exception, match=r"mmap object the closure variable m \(write\)"):
            thunder.jit(write)(torch.ones(2))
        with pytest.raises(Exception, match=r"mmap object the closure variable m \(__setitem__\)"):
            thunder.jit(set_item)(torch.ones(2))
        assert m[:2] == b"ab" and m.tell() == 0
        with pytest.raises(
            Exception,
            match=r"reads the mmap.mmap object the closure variable m \(__getitem__\); its contents",
        ):
            thunder.jit(read)(torch.ones(2))
        js = thunder.jit(size)
        for _ in range(3):
            torch.testing.assert_close(js(torch.ones(2)), size(torch.ones(2)))
    finally:
        m.close()


def test_a_global_deque_is_written_on_every_call():
    def f(x):
        D.append(len(D))
        return x * 2

    D.clear()
    jf = thunder.jit(f)
    for _ in range(4):
        jf(torch.ones(2))
    assert D == collections.deque([1, 2, 3], maxlen=3)


def test_an_array_read_is_checked_by_its_contents():
    values = array.array("f", [1.0, 2.0])
    data = bytearray(b"\x01\x02")

    def f(x):
        return x * values[0] + data[1]

    jf = thunder.jit(f)
    for i in range(3):
        values[0] = float(i)
        data[1] = i
        torch.testing.assert_close(jf(torch.ones(2)), f(torch.ones(2)))
    jf(torch.ones(2))
    assert thunder.compile_stats(jf).cache_misses == 3


class _Holder:
    def __init__(self):
        self.buf = bytearray(b"x")


_HOLDER = _Holder()


def test_writes_into_an_array_a_module_or_an_object_holds_are_refused():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.seen = array.array("i")

        def forward(self, x):
            self.seen.append(1)
            return x + len(self.seen)

    def f(x):
        _HOLDER.buf.extend(b"yz")
        return x + 1

    m = M()
    with pytest.raises(
        Exception, match=r"array\.array object the attribute seen of the .*M module \(append\)"
    ):
        thunder.jit(m)(torch.ones(2))
    with pytest.raises(Exception, match=r"bytearray object the attribute buf of the _Holder object"):
        thunder.jit(f)(torch.ones(2))
    assert len(m.seen) == 0 and _HOLDER.buf == bytearray(b"x")


def test_an_array_a_module_holds_is_read_and_checked_by_its_contents():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = array.array("f", [2.0])

        def forward(self, x):
            return x * self.scale[0]

    m = M()
    jm = thunder.jit(m)
    for i in range(3):
        m.scale[0] = float(i)
        torch.testing.assert_close(jm(torch.ones(2)), m(torch.ones(2)))
