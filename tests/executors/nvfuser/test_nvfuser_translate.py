"""The nvFuser translation without nvFuser: the table, the support checks and their reasons,
the printed repro (golden), and why nvFuser is unavailable. ``make check-nvfuser`` proves the
definitions against real nvFuser; the CUDA-marked test runs them where a GPU and nvFuser are."""

from __future__ import annotations

import pytest
import torch

import thunder
from thunder.core.context import tracectx
from thunder.core.proxies import NumberProxy, TensorProxy
from thunder.core.pytree import tree_leaves
from thunder.core.symbol import BoundSymbol, symbols_with
from thunder.core.tags import Tag
from thunder.core.trace import Trace
from thunder.executors.nvfuser import (
    TRANSLATIONS,
    UNSUPPORTED,
    NvFuserUnavailable,
    TensorDescriptor,
    TranslationError,
    define_fusion,
    fusion_definition_source,
    fusion_repro,
    loader,
    unavailable_reason,
    unsupported_reason,
)
from thunder.ops import prims

# the tensor prims (the Python-level prims of prologues and epilogues never reach a fusion)
PRIMS = frozenset(s for s in symbols_with(Tag.PRIM) if Tag.PYTHON not in s.tags)


def _prims(bsyms, *, keep_source=False):
    for b in bsyms:
        if b.sym in PRIMS:
            yield b if keep_source else b.from_bsym(source=None)
        else:
            yield from _prims(b.subsymbols, keep_source=keep_source)


def region(fn, *inputs, keep_source=False):
    """(prim BoundSymbols, inputs, outputs) of ``fn``'s final trace, taken as one region."""
    jfn = thunder.jit(fn)
    jfn(*inputs)
    trace = thunder.last_traces(jfn)[-1]
    return (
        list(_prims(trace.bound_symbols, keep_source=keep_source)),
        list(trace.args),
        tree_leaves(trace.output),
    )


def reason_for(fn, *inputs, prim):
    bsyms, _, _ = region(fn, *inputs)
    (bsym,) = [b for b in bsyms if b.sym is prim]
    return unsupported_reason(bsym)


def test_every_prim_is_translated_or_refused_with_a_reason():
    assert set(TRANSLATIONS) | set(UNSUPPORTED) == PRIMS
    assert not set(TRANSLATIONS) & set(UNSUPPORTED)
    assert TRANSLATIONS[prims.slice_prim] is not None  # the prim bound as prims.slice_prim
    assert all(reason for reason in UNSUPPORTED.values())


def test_support_checks_and_their_reasons():
    x = torch.randn(3, 4)
    assert reason_for(torch.sin, x, prim=prims.sin) is None
    assert reason_for(lambda a: torch.flip(a, (0,)), x, prim=prims.flip) == "nvFuser has no flip"
    i8 = torch.ones(3, dtype=torch.int8)
    assert reason_for(lambda a: a + a, i8, prim=prims.add) == "a: nvFuser has no int8 dtype"
    ints = torch.ones(2, 2, dtype=torch.int64)
    assert reason_for(lambda a, b: a @ b, ints, ints, prim=prims.matmul) == (
        "a: CUDA matrix products take floating-point tensors, got torch.int64"
    )
    assert reason_for(lambda a: a.sin(), torch.ones(2, dtype=torch.complex64), prim=prims.sin) == (
        "a: complex tensors are not translated"
    )
    assert reason_for(lambda a: torch.var(a, 1, correction=0.5), x, prim=prims.var) == (
        "nvFuser's var takes an integer correction, got 0.5"
    )
    assert reason_for(lambda a: torch.var(a, 1, correction=0), x, prim=prims.var) is None
    same, fewer = torch.zeros(3, 2, dtype=torch.int64), torch.zeros(2, 4, dtype=torch.int64)
    assert reason_for(lambda a, i: torch.gather(a, 1, i), x, same, prim=prims.take_along_axis) is None
    assert reason_for(lambda a, i: torch.gather(a, 1, i), x, fewer, prim=prims.take_along_axis) == (
        "index shape (2, 4) differs from the input's (3, 4) outside dimension 1; "
        "nvFuser's take_along_axis does not broadcast"
    )
    # nvFuser's slice takes step 1 only (make check-nvfuser found diagonal's strided slice)
    assert reason_for(lambda a: a[1:3], x, prim=prims.slice_prim) is None
    assert reason_for(lambda a: a[::2], x, prim=prims.slice_prim) == (
        "nvFuser slices with step 1 only (this one steps by (2, 1))"
    )
    # a cast to a dtype nvFuser lacks is refused for the dtype argument itself
    assert reason_for(lambda a: a.to(torch.uint8), x, prim=prims.convert_element_type) == (
        "nvFuser has no uint8 dtype"
    )


def test_a_region_with_an_untranslatable_member_is_refused_naming_op_and_line():
    bsyms, inputs, outputs = region(lambda a: torch.flip(a.sin(), (0,)), torch.randn(3), keep_source=True)
    with pytest.raises(TranslationError) as e:
        fusion_repro(bsyms, inputs, outputs)
    msg = str(e.value)
    assert "nvFuser cannot take `t1 = prims.flip(t0, (0,))" in msg and "nvFuser has no flip" in msg
    assert "test_nvfuser_translate.py:" in msg  # the user's source line


def test_a_value_from_outside_the_region_must_be_an_input():
    bsyms, inputs, outputs = region(lambda a: a.sin().cos(), torch.randn(3))
    with pytest.raises(TranslationError, match="t0 is used in the fusion but is neither one of its inputs"):
        fusion_repro(bsyms[1:], inputs, outputs)


GOLDEN = """\
# nvFuser repro of a thunder fusion region (6 prims)
import torch
from nvfuser_direct import FusionDefinition, DataType


def nvfuser_fusion(fd: FusionDefinition) -> None:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)  # x
    T1 = fd.define_tensor(shape=[1, -1], contiguity=[None, True], dtype=DataType.BFloat16, is_cpu=False)  # y
    # t0 = prims.sin(x)  # t0: "cpu bf16[3, 4]"
    T2 = fd.ops.cast(T0, dtype=DataType.Float)
    T3 = fd.ops.sin(T2)
    T4 = fd.ops.cast(T3, dtype=DataType.BFloat16)
    # t1 = prims.mul(t0, 2.5)  # t1: "cpu bf16[3, 4]"
    T5 = fd.ops.cast(T4, dtype=DataType.Float)
    S6 = fd.define_scalar(2.5, dtype=DataType.Float)
    T7 = fd.ops.mul(T5, S6)
    T8 = fd.ops.cast(T7, dtype=DataType.BFloat16)
    # t2 = prims.add(t1, y)  # t2: "cpu bf16[3, 4]"
    T9 = fd.ops.cast(T8, dtype=DataType.Float)
    T10 = fd.ops.cast(T1, dtype=DataType.Float)
    T11 = fd.ops.broadcast_in_dim(T10, shape=[3, 4], broadcast_dims=[0, 1])
    T12 = fd.ops.add(T9, T11)
    T13 = fd.ops.cast(T12, dtype=DataType.BFloat16)
    # t3 = prims.convert_element_type(t2, torch.float32)  # t3: "cpu f32[3, 4]"
    T14 = fd.ops.cast(T13, dtype=DataType.Float)
    # t4 = prims.sum(t3, (1,))  # t4: "cpu f32[3]"
    T15 = fd.ops.sum(T14, dims=[1], keepdim=False, dtype=DataType.Float)
    # t5 = prims.convert_element_type(t4, torch.bfloat16)  # t5: "cpu bf16[3]"
    T16 = fd.ops.cast(T15, dtype=DataType.BFloat16)
    fd.add_output(T16)


with FusionDefinition() as fd:
    nvfuser_fusion(fd)

inputs = [
    torch.testing.make_tensor((3, 4), dtype=torch.bfloat16, device='cuda'),  # T0: x
    torch.testing.make_tensor((1, 4), dtype=torch.bfloat16, device='cuda'),  # T1: y
]
outputs = fd.execute(inputs)
print(outputs)
"""


def _small(x, y):
    return (x.sin() * 2.5 + y).sum(1)


def test_repro_golden():
    x, y = torch.randn(3, 4, dtype=torch.bfloat16), torch.randn(1, 4, dtype=torch.bfloat16)
    text = fusion_repro(*region(_small, x, y))
    assert text == GOLDEN
    compile(text, "<repro>", "exec")


def test_definition_source_and_the_older_module():
    x, y = torch.randn(3, 4), torch.randn(4)
    bsyms, inputs, outputs = region(_small, x, y)
    source = fusion_definition_source(bsyms, inputs, outputs, api="nvfuser")
    assert source.startswith("import torch\nfrom nvfuser import FusionDefinition, DataType\n")
    assert "fd.execute" not in source and "def nvfuser_fusion(fd: FusionDefinition) -> None:" in source
    # float32 needs no casts; y broadcasts from the right; static extents when asked
    assert "fd.ops.cast" not in source
    assert "fd.ops.broadcast_in_dim(T1, shape=[3, 4], broadcast_dims=[1])" in source
    static = fusion_definition_source(bsyms, inputs, outputs, static_shapes=True)
    assert "fd.define_tensor(shape=[3, 4], contiguity=[True, True]" in static


def test_repro_comments_carry_the_source_line():
    bsyms, inputs, outputs = region(_small, torch.randn(3, 4), torch.randn(4), keep_source=True)
    text = fusion_repro(bsyms, inputs, outputs)
    assert "    #   from " in text and "test_nvfuser_translate.py:" in text and " in _small" in text


def test_repro_index_inputs_stay_in_range():
    # x[idx] normalises negative indices (where(idx < 0, idx + 4, idx)) before indexing
    bsyms, inputs, outputs = region(lambda x, idx: x[idx] * 2, torch.randn(4, 3), torch.tensor([0, 2]))
    text = fusion_repro(bsyms, inputs, outputs)
    assert "fd.ops.index_select(T0, T6, dim=0)" in text
    assert (
        "torch.testing.make_tensor((2,), dtype=torch.int64, device='cuda', low=0, high=4),  # T1: idx" in text
    )


def test_number_inputs_and_descriptors():
    """A number proxy enters as a symbolic scalar cast to the dtype the op computes in; a
    descriptor with a stride order shows in define_tensor and in the example input."""
    trc = Trace()
    with tracectx(trc):
        t = TensorProxy("t", (2, 3), torch.float32, "cpu")
        n = NumberProxy("n", 3)
        out = TensorProxy("out", (2, 3), torch.float32, "cpu")
    bsym = BoundSymbol(prims.mul, (t, n), {}, out)
    d = TensorDescriptor((-1, -1), (True, True), (0, 1))
    text = fusion_repro([bsym], [t, n], [out], descriptors=[d, None])
    assert "T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, " in text
    assert "is_cpu=False, stride_order=[0, 1])  # t" in text
    assert "S1 = fd.define_scalar(None, dtype=DataType.Int)  # n" in text
    assert "S2 = fd.ops.cast(S1, dtype=DataType.Float)\n    T3 = fd.ops.mul(T0, S2)" in text
    assert (
        "torch.testing.make_tensor((3, 2), dtype=torch.float32, device='cuda').permute((1, 0)),  # T0: t"
        in text
    )
    assert "    3,  # S1: n" in text


def test_an_input_returned_unchanged_leaves_as_a_copy():
    trc = Trace()
    with tracectx(trc):
        t = TensorProxy("t", (2,), torch.float32, "cpu")
    text = fusion_definition_source([], [t], [t])
    assert "T1 = fd.ops.set(T0)\n    fd.add_output(T1)" in text


@pytest.fixture
def fresh_imports(monkeypatch):
    loader._import.cache_clear()
    yield monkeypatch
    loader._import.cache_clear()


def test_unavailable_without_cuda(fresh_imports):
    fresh_imports.setattr(torch.cuda, "is_available", lambda: False)
    assert unavailable_reason() == "no CUDA device"


def test_unavailable_when_nvfuser_does_not_import(fresh_imports):
    fresh_imports.setattr(torch.cuda, "is_available", lambda: True)
    for name in loader.APIS:  # None in sys.modules makes ``import`` fail, as a missing wheel does
        fresh_imports.setitem(__import__("sys").modules, name, None)
    assert unavailable_reason() == (
        "nvfuser not importable: nvfuser_direct: ModuleNotFoundError: import of nvfuser_direct halted; "
        "None in sys.modules; nvfuser: ModuleNotFoundError: import of nvfuser halted; None in sys.modules"
    )
    assert unavailable_reason("nvfuser").startswith("nvfuser not importable: nvfuser: ModuleNotFoundError")
    bsyms, inputs, outputs = region(torch.sin, torch.randn(3))
    with pytest.raises(NvFuserUnavailable, match="nvfuser not importable"):
        define_fusion(bsyms, inputs, outputs)


def _nvfuser_on_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    try:
        return loader.load()
    except Exception as e:  # a missing or broken wheel
        pytest.skip(f"nvFuser does not import: {e}")


@pytest.mark.cuda
@pytest.mark.parametrize(
    "fn",
    [
        _small,
        lambda x, y: torch.nn.functional.gelu(x @ y.T).softmax(-1),
        lambda x, y: torch.nn.functional.layer_norm(x + y, (4,)),
    ],
)
def test_fusions_run_on_cuda_and_match_eager(fn):
    _nvfuser_on_cuda()
    x, y = torch.randn(3, 4, device="cuda"), torch.randn(3, 4, device="cuda")
    bsyms, inputs, outputs = region(fn, x, y)
    fd = define_fusion(bsyms, inputs, outputs)
    (got,) = fd.execute([x, y])
    torch.testing.assert_close(got, fn(x, y))
