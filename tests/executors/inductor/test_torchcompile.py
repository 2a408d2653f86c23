"""The torch.compile executor on CPU: regions compiled by Inductor (no Dynamo) match eager,
forward and through autograd, keep their members (source lines, module scopes), and compile
once per input signature.

Inductor's first compilation of a graph in a fresh cache takes seconds of C++ compiling;
later runs find it in the on-disk cache. The op database's fusible ops, one compilation each,
are the ``slow`` test at the end.
"""

from __future__ import annotations

import copy
import os
import warnings

import pytest
import torch
from support.models import GPT, MLP, Block
from support.opdb import OPS, Maker
from support.tiny_gpt2 import tiny_gpt2_config

import thunder
from thunder.core.proxies import TensorProxy
from thunder.core.tags import Tag
from thunder.core.verify import verify
from thunder.executors.fusion import FusionExecutor
from thunder.executors.inductor import executor as torchcompileex
from thunder.executors.inductor.executor import NOT_FUSED, InductorRegion, TorchCompileExecutor
from thunder.ops import prims


@pytest.fixture(autouse=True, scope="module")
def _cpp_wrapper():
    """The executor's own tests compile as users get it: CPU regions with the C++ wrapper (the
    rest of the suite takes the Python one, quicker to compile: tests/conftest.py)."""
    previous = torchcompileex.cpp_wrapper(True)
    yield
    torchcompileex.cpp_wrapper(previous)


def _regions(jfn):
    return [b for b in thunder.last_traces(jfn)[-1].bound_symbols if b.has_tag(Tag.FUSION)]


def _members(region):
    return [m.sym.name for m in region.subsymbols]


def _verify(jfn):
    for t in thunder.last_traces(jfn):
        verify(t)


def chain(x, y):
    a = torch.sin(x) * y
    b = torch.nn.functional.gelu(a + 1)
    return b.exp().sum(-1)


CHAIN_GOLDEN = """\
# Constructed by Delete Last Used
import torch

def computation(x, y):
  # x: "cpu f32[4, 5]"
  # y: "cpu f32[4, 5]"
  t9 = TorchCompile0(x, y)  # t9: "cpu f32[4]"
    # t0 = ltorch.sin(x)  # t0: "cpu f32[4, 5]"
      # t0 = prims.sin(x)  # t0: "cpu f32[4, 5]"
    # t1 = ltorch.mul(t0, y)  # t1: "cpu f32[4, 5]"
      # t1 = prims.mul(t0, y)  # t1: "cpu f32[4, 5]"
    # t2 = ltorch.add(t1, 1)  # t2: "cpu f32[4, 5]"
      # t2 = prims.add(t1, 1)  # t2: "cpu f32[4, 5]"
    # t7 = ltorch.gelu(t2)  # t7: "cpu f32[4, 5]"
      # t3 = prims.mul(t2, 0.5)  # t3: "cpu f32[4, 5]"
      # t4 = prims.mul(t2, 0.7071067811865475)  # t4: "cpu f32[4, 5]"
      # t5 = prims.erf(t4)  # t5: "cpu f32[4, 5]"
      # t6 = prims.add(t5, 1)  # t6: "cpu f32[4, 5]"
      # t7 = prims.mul(t3, t6)  # t7: "cpu f32[4, 5]"
    # t8 = ltorch.exp(t7)  # t8: "cpu f32[4, 5]"
      # t8 = prims.exp(t7)  # t8: "cpu f32[4, 5]"
    # t9 = ltorch.sum(t8, -1)  # t9: "cpu f32[4]"
      # t9 = prims.sum(t8, (1,))  # t9: "cpu f32[4]"
  return (t9,)
"""


def test_a_chain_is_one_region_printed_with_its_members():
    jfn = thunder.jit(chain, executors=["torchcompile"])
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    torch.testing.assert_close(jfn(x, y), chain(x, y))
    _verify(jfn)
    final = thunder.last_traces(jfn)[-1]
    assert str(final) == CHAIN_GOLDEN
    (region,) = _regions(jfn)
    assert region.info.claimed_by == "torchcompile"
    assert [m.info.claimed_by for m in region.subsymbols] == ["torchcompile"] * 6
    lines = [m.source.lineno for m in region.subsymbols]
    first = chain.__code__.co_firstlineno
    assert lines == [first + 1, first + 1, first + 2, first + 2, first + 3, first + 3]


def test_an_op_left_to_torch_splits_regions_along_the_dependencies():
    # cumsum stays with torch (NOT_FUSED): the mul after it needs it, the cos does not, so
    # cos joins sin's region across it and mul starts another
    def fn(x):
        a = x.sin()
        c = a.cumsum(0)
        d = x.cos()
        return (c * d).exp(), d

    assert prims.cumsum in NOT_FUSED
    jfn = thunder.jit(fn, executors=["torchcompile"])
    x = torch.randn(6)
    torch.testing.assert_close(jfn(x), fn(x))
    _verify(jfn)
    r0, r1 = _regions(jfn)
    assert (r0.sym.name, _members(r0), [p.name for p in r0.args]) == ("TorchCompile0", ["sin", "cos"], ["x"])
    assert [p.name for p in r0.output] == ["t0", "t2"]
    assert (r1.sym.name, _members(r1), [p.name for p in r1.args], r1.output.name) == (
        "TorchCompile1",
        ["mul", "exp"],
        ["t1", "t2"],
        "t4",
    )
    ids = [b.sym.id for b in thunder.last_traces(jfn)[-1].bound_symbols if not b.has_tag(Tag.DEL)]
    assert ids == ["torchcompile.TorchCompile0", "torch.cumsum", "torchcompile.TorchCompile1"]
    cumsum = thunder.last_traces(jfn)[-1].bound_symbols[1]
    assert cumsum.info.declined["torchcompile"].startswith("torchcompile does not fuse ltorch.cumsum")


def test_compiled_once_per_signature_and_never_through_dynamo():
    from torch._dynamo.utils import counters

    frames = counters["frames"]["total"]
    jfn = thunder.jit(chain, executors=["torchcompile"])
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    for _ in range(3):
        torch.testing.assert_close(jfn(x, y), chain(x, y))
    (region,) = _regions(jfn)
    compiled = region.sym.impl
    assert isinstance(compiled, InductorRegion) and len(compiled.compiled) == 1
    # the same metadata with other strides: the same trace, one more compilation
    xt = torch.randn(5, 4).t()
    torch.testing.assert_close(jfn(xt, y), chain(xt, y))
    assert len(compiled.compiled) == 2
    assert counters["frames"]["total"] == frames
    assert "TorchCompile0: Inductor region of 6 operations, 2 compiled" in repr(compiled)
    # each call runs the function compiled for its strides: the one checked first (the last
    # one used) turns the other strides away (Inductor's code asserts no strides itself)
    for a in (x, xt, xt, x, xt):
        torch.testing.assert_close(jfn(a, y), chain(a, y))
        grad_mode, guard, fn, moves = compiled.last
        assert fn is compiled.compiled[(grad_mode, *[(t.shape, t.stride()) for t in (a, y)])]
        assert guard.check(a, y) and not guard.check(x if a is xt else xt, y)
        assert moves == ()  # (an elementwise chain: Inductor keeps eager's strides)
    assert len(compiled.compiled) == 2


@pytest.fixture
def background():
    previous = torchcompileex.compile_in_background(True)
    yield
    torchcompileex.wait()
    torchcompileex.compile_in_background(previous)


class _Jobs:
    """Stands in for the helper process: records the jobs; the test answers them."""

    def __init__(self):
        import concurrent.futures

        self.jobs, self.futures = [], []
        self.Future = concurrent.futures.Future

    def submit(self, program, meta, grad):
        self.jobs.append((program, meta, grad))
        self.futures.append(self.Future())
        return self.futures[-1]


def test_in_the_background_the_calls_run_the_torch_calls_until_the_helper_is_done(background, monkeypatch):
    jobs = _Jobs()
    monkeypatch.setattr(torchcompileex, "_helper", jobs)
    jfn = thunder.jit(chain, executors=["torchcompile"])
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    for _ in range(2):  # eager's answer, from the region's torch calls, while the helper compiles
        torch.testing.assert_close(jfn(x, y), chain(x, y))
    (region,) = _regions(jfn)
    impl = region.sym.impl
    assert impl.compiled == {} and len(jobs.jobs) == 1  # one compilation asked for, not two
    source, modules, _, name = jobs.jobs[0][0]  # the program as the helper rebuilds it
    assert f"def {name}(" in source and "torch" in modules
    jobs.futures[0].set_result(None)  # done: the next call loads it and runs Inductor's code
    torch.testing.assert_close(jfn(x, y), chain(x, y))
    ((key, fn),) = impl.compiled.items()
    assert fn is not impl.program and not impl.compiling


def test_a_region_the_helper_cannot_compile_warns_and_keeps_its_torch_calls(background, monkeypatch):
    jobs = _Jobs()
    monkeypatch.setattr(torchcompileex, "_helper", jobs)
    jfn = thunder.jit(chain, executors=["torchcompile"])
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    jfn(x, y)
    jobs.futures[0].set_result("ValueError: no code for this")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.testing.assert_close(jfn(x, y), chain(x, y))
    messages = [str(w.message) for w in caught]
    assert any("could not compile TorchCompile0" in m and "no code for this" in m for m in messages)
    (region,) = _regions(jfn)
    assert list(region.sym.impl.compiled.values()) == [region.sym.impl.program]
    torch.testing.assert_close(jfn(x, y), chain(x, y))


def test_with_deterministic_algorithms_regions_compile_on_the_calling_thread(background, monkeypatch):
    jobs = _Jobs()
    monkeypatch.setattr(torchcompileex, "_helper", jobs)
    torch.use_deterministic_algorithms(True)
    try:
        jfn = thunder.jit(chain, executors=["torchcompile"])
        jfn(torch.randn(4, 5), torch.randn(4, 5))
    finally:
        torch.use_deterministic_algorithms(False)
    (region,) = _regions(jfn)
    assert not jobs.jobs and len(region.sym.impl.compiled) == 1


@pytest.mark.slow
def test_the_helper_process_fills_the_caches_the_calling_thread_loads_from(
    background, tmp_path, monkeypatch, request
):
    """End to end: the helper compiles the GPT block's forward and backward regions while the
    calls run; the calling thread then loads them from Inductor's caches (hits, no compiling
    here); meanwhile nothing in this process is FX-traced, so a torch.compile'd function runs."""
    from torch._dynamo.utils import counters
    from torch.fx._symbolic_trace import is_fx_tracing

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))  # a fresh cache: the helper compiles
    torchcompileex._helper.close()  # (the next one starts with this environment)
    request.addfinalizer(torchcompileex._helper.close)
    torch.manual_seed(0)
    model = Block(d=32, heads=4)
    ref = copy.deepcopy(model)
    jm = thunder.jit(model, executors=["torchcompile"])
    x = torch.randn(2, 8, 32)
    other = torch.compile(lambda t: t.sin() + 1, backend="eager")
    hits = counters["inductor"]["fxgraph_cache_hit"]
    for _ in range(3):
        out = jm(x)
        out.sum().backward()
        assert not is_fx_tracing()
        torch.testing.assert_close(other(x), x.sin() + 1)
    assert torchcompileex._waiting  # still compiling (a fresh cache takes seconds)
    torchcompileex.wait()
    assert not torchcompileex._waiting
    # forward and backward region: thunder differentiates, so Inductor gets two inference graphs,
    # which AOTAutograd traces again here and Inductor's own cache gives compiled
    assert counters["inductor"]["fxgraph_cache_hit"] - hits == 2
    model.zero_grad()
    out = jm(x)
    out.sum().backward()
    want = ref(x)
    want.sum().backward()
    torch.testing.assert_close(out, want)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
    for region in _regions(jm):
        assert all(fn is not region.sym.impl.program for fn in region.sym.impl.compiled.values())


def test_compiled_on_the_calling_thread_a_failure_is_an_error_naming_the_region(monkeypatch):
    import torch._inductor.compile_fx as compile_fx_module

    def fails(gm, example_inputs):
        raise ValueError("no code for this")

    monkeypatch.setattr(compile_fx_module, "compile_fx", fails)
    jfn = thunder.jit(chain, executors=["torchcompile"])
    with pytest.raises(RuntimeError, match=r"could not compile TorchCompile0, a region of 6 operations"):
        jfn(torch.randn(4, 5), torch.randn(4, 5))


def _record_wrappers(monkeypatch, cpp_fails: bool) -> list:
    """Which wrapper Inductor was asked for, call by call (``cpp_wrapper`` at each compile)."""
    import torch._inductor.compile_fx as compile_fx_module
    from torch._inductor import config as inductor_config

    real, asked = compile_fx_module.compile_fx, []

    def recording(gm, example_inputs, **kwargs):
        asked.append(inductor_config.cpp_wrapper)
        if cpp_fails and inductor_config.cpp_wrapper:
            raise NotImplementedError("no C++ wrapper for this")
        return real(gm, example_inputs, **kwargs)

    monkeypatch.setattr(compile_fx_module, "compile_fx", recording)
    return asked


@pytest.mark.parametrize("cpp_fails", [False, True], ids=["cpp", "cpp_fails"])
def test_on_cpu_a_region_gets_inductors_cpp_wrapper_or_else_the_python_one(monkeypatch, cpp_fails):
    asked = _record_wrappers(monkeypatch, cpp_fails)
    jfn = thunder.jit(chain, executors=["torchcompile"])
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            torch.testing.assert_close(jfn(x, y), chain(x, y))
    assert not [w for w in caught if "thunder" in str(w.message)]  # no failure to report
    assert asked == ([True, False] if cpp_fails else [True])
    (region,) = _regions(jfn)
    assert all(fn is not region.sym.impl.program for fn in region.sym.impl.compiled.values())


def test_cpp_wrapper_false_compiles_with_the_python_wrapper(monkeypatch):
    previous = torchcompileex.cpp_wrapper(False)
    try:
        asked = _record_wrappers(monkeypatch, cpp_fails=False)
        jfn = thunder.jit(chain, executors=["torchcompile"])
        x, y = torch.randn(4, 5), torch.randn(4, 5)
        torch.testing.assert_close(jfn(x, y), chain(x, y))
        assert asked == [False]
    finally:
        torchcompileex.cpp_wrapper(previous)


@pytest.mark.parametrize("helper_found", [True, False], ids=["cpp", "python"])
def test_the_wrapper_the_helper_compiled_with_is_the_one_loaded(background, monkeypatch, helper_found):
    """Where the helper process found that a region's wrapper cannot be C++, the calling thread
    loads the Python one without trying C++ again (a failing C++ compilation takes seconds)."""
    jobs = _Jobs()
    monkeypatch.setattr(torchcompileex, "_helper", jobs)
    jfn = thunder.jit(chain, executors=["torchcompile"])
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    jfn(x, y)
    asked = _record_wrappers(monkeypatch, cpp_fails=False)
    jobs.futures[0].cpp_wrapper = helper_found  # (as Helper._read sets it from the answer)
    jobs.futures[0].set_result(None)
    torch.testing.assert_close(jfn(x, y), chain(x, y))
    assert asked == [helper_found]


def test_an_answer_the_helper_cannot_read_fails_the_waiting_compilations():
    """A reply of the helper process that cannot be read ends the reading thread: what it had
    not answered fails (the region keeps its torch calls) rather than waiting forever."""
    import concurrent.futures
    import io

    from thunder.executors.inductor.compile import write_message
    from thunder.executors.inductor.helper import Helper

    class Proc:
        stdout = io.BytesIO()
        killed = False

        def kill(self):
            self.killed = True

        def wait(self):
            return -9

    write_message(Proc.stdout, ("not", "an", "answer", "of", "five"))
    Proc.stdout.seek(0)
    helper, proc = Helper(), Proc()
    waiting = helper.futures[1] = concurrent.futures.Future()
    helper._read(proc)
    assert proc.killed and "could not be read" in waiting.result(timeout=0)


def _train_step(fn, model, *inputs):
    out = fn(*inputs)
    out.float().pow(2).mean().backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    return out, grads


@pytest.mark.parametrize(
    "make",
    [
        lambda: (MLP(), torch.randn(8, 32)),
        lambda: (Block(), torch.randn(2, 8, 32)),
        lambda: (GPT(), torch.randint(0, 50, (2, 8))),
    ],
    ids=["mlp", "gpt_block", "gpt"],
)
def test_models_forward_and_gradients_match_eager(make):
    model, x = make()
    jm = thunder.jit(model, executors=["torchcompile"])
    with torch.no_grad():
        torch.testing.assert_close(jm(x), model(x), rtol=1e-5, atol=1e-5)
    out, grads = _train_step(jm, model, x)
    ref, ref_grads = _train_step(model, model, x)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    assert grads.keys() == ref_grads.keys()
    torch.testing.assert_close(grads, ref_grads, rtol=1e-4, atol=1e-5)
    _verify(jm)
    assert _regions(jm)
    if thunder.last_backward_traces(jm):  # thunder's own backward, when it makes one, is fused too
        assert any(b.has_tag(Tag.FUSION) for b in thunder.last_backward_traces(jm)[-1].bound_symbols)


def test_a_region_keeps_its_members_scopes():
    model = GPT()
    jm = thunder.jit(model, executors=["torchcompile"])
    jm(torch.randint(0, 50, (2, 8)))
    regions = _regions(jm)
    assert regions
    paths = set()
    for r in regions:
        for m in r.subsymbols:
            assert m.scope is not None, f"{m.sym.id} in {r.sym.name} lost its scope"
            # the region's scope is the innermost module call holding all its members
            assert r.scope is None or any(s is r.scope for s in m.scope.chain())
            paths.add(m.scope.path)
    assert {"tok", "pos", "blocks.0.ln1", "blocks.0.attn.qkv", "blocks.1.mlp.1", "head"} <= paths
    assert all(r.scope is not None and r.scope.path == "" and r.scope.cls == "GPT" for r in regions)


def test_a_region_inside_one_module_has_that_scope():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())
    jm = thunder.jit(lambda x: model(x).cumsum(-1) * 2 + 1, executors=["torchcompile"])
    x = torch.randn(2, 4)
    torch.testing.assert_close(jm(x), model(x).cumsum(-1) * 2 + 1)
    r0, r1 = _regions(jm)
    assert [m.scope.cls for m in r0.subsymbols] == ["Linear", "GELU"]
    assert r0.scope.cls == "Sequential" and r1.scope is None  # mul and add are outside any module


def test_one_op_that_torch_runs_whole_is_left_to_torch():
    def fn(x):
        return torch.nn.functional.layer_norm(x, (4,))

    jfn = thunder.jit(fn, executors=["torchcompile"])
    x = torch.randn(3, 4)
    torch.testing.assert_close(jfn(x), fn(x))
    assert _regions(jfn) == []
    (ln,) = [b for b in thunder.last_traces(jfn)[-1].bound_symbols if not b.has_tag(Tag.DEL)]
    assert ln.info.claimed_by == "torch"
    assert ln.info.declined["torchcompile"] == (
        "torchcompile did not fuse it: a region of one op that torch runs whole has nothing to fuse"
    )
    # with a second op there is something to fuse
    jfn = thunder.jit(lambda x: fn(x) * 2, executors=["torchcompile"])
    torch.testing.assert_close(jfn(x), fn(x) * 2)
    (region,) = _regions(jfn)
    assert _members(region) == ["layer_norm", "mul"]


def test_transformers_gpt2_matches_eager():
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    cfg = tiny_gpt2_config(transformers)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 100, (2, 6))
    jm = thunder.jit(model, executors=["torchcompile"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            out = jm(ids, use_cache=False)
            ref = model(ids, use_cache=False)
        torch.testing.assert_close(out.logits, ref.logits, rtol=1e-5, atol=1e-5)
        jm(ids, use_cache=False, labels=ids).loss.backward()
        grads = {n: p.grad for n, p in model.named_parameters()}
        model.zero_grad(set_to_none=True)
        model(ids, use_cache=False, labels=ids).loss.backward()
    torch.testing.assert_close(grads, {n: p.grad for n, p in model.named_parameters()}, rtol=1e-4, atol=1e-5)
    _verify(jm)
    assert _regions(jm)


def test_gpt2_steps_with_the_cpp_wrapper_match_eager_as_state_changes():
    """A transformers GPT-2 (tiny config) trained 3 steps through regions with Inductor's C++
    wrapper (which reuses its buffers from call to call), an eval call between steps: losses,
    logits and parameters equal eager's copy after each step; the outputs of earlier calls keep
    their values (no buffer of a later call reaches them); no proxy in the outputs or the model."""
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    assert torchcompileex.cpp_wrapper(True)  # (this module's setting: the wrapper users get)
    cfg = tiny_gpt2_config(transformers, dropout=False)
    model = transformers.GPT2LMHeadModel(cfg)
    ref = copy.deepcopy(model)
    jm = thunder.jit(model, executors=["torchcompile", "torch"])
    opt, ref_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, ref))
    kept = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            ids = torch.randint(0, 100, (2, 6))
            for m in (model, ref):
                m.train()
            loss = jm(ids, use_cache=False, labels=ids).loss
            want = ref(ids, use_cache=False, labels=ids).loss
            torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-5)
            loss.backward()
            want.backward()
            opt.step(), ref_opt.step()
            opt.zero_grad(), ref_opt.zero_grad()
            for m in (model, ref):
                m.eval()
            with torch.no_grad():
                logits = jm(ids, use_cache=False).logits
                torch.testing.assert_close(logits, ref(ids, use_cache=False).logits, rtol=1e-5, atol=1e-5)
            kept.append((logits, logits.clone()))
            torch.testing.assert_close(dict(model.named_parameters()), dict(ref.named_parameters()))
    for logits, value in kept:
        assert torch.equal(logits, value), "a later call wrote into an earlier call's output"
        assert not isinstance(logits, TensorProxy)
    assert not any(isinstance(v, TensorProxy) for v in (*model.parameters(), *model.buffers()))
    assert not any(isinstance(v, TensorProxy) for v in vars(model).values())
    regions = [r for t in (thunder.last_traces(jm)[-1],) for r in t.bound_symbols if r.has_tag(Tag.FUSION)]
    assert regions and all(
        fn is not r.sym.impl.program for r in regions for fn in r.sym.impl.compiled.values()
    )


def _fusible(info) -> bool:
    return not info.cuda and info.values and torch.float32 in info.dtypes


# Compiling every op takes Inductor about 8 minutes on a CI machine: the suite takes every tenth
# op; THUNDER_EVERY_OP=1 (``make check-torchcompile``) takes them all.
_COMPILED_OPS = [i for i in OPS if not i.cuda and torch.float32 in i.dtypes]
if os.environ.get("THUNDER_EVERY_OP") != "1":
    _COMPILED_OPS = _COMPILED_OPS[::10]


@pytest.mark.slow
@pytest.mark.parametrize("info", _COMPILED_OPS, ids=lambda i: i.id)
def test_op_database_through_torchcompile(info):
    """Each op (float32, first sample) with the torch.compile executor equals eager; even
    alone (its regions of one op are compiled here, not left to torch)."""
    from support.compare import compare, split_tensors

    sample = info.samples(Maker(torch.float32))[0]
    tensors, rebuild = split_tensors(sample)

    def fn(*ts):
        args, kwargs = rebuild(ts)
        return info.op(*args, **kwargs)

    torch.manual_seed(0)
    expected = (info.ref or info.op)(*sample.args, **sample.kwargs)
    torch.manual_seed(0)
    jfn = thunder.jit(fn, executors=[EveryRegion("torchcompile")])
    compare(info, torch.float32, sample, jfn(*tensors), expected, f"{info.id} through torchcompile")
    _verify(jfn)


class EveryRegion(TorchCompileExecutor):
    """The torch.compile executor compiling regions of one op too."""

    def region_reason(self, region):
        return FusionExecutor.region_reason(self, region)


def test_a_library_operator_stays_outside_and_independent_work_joins_across_it():
    from support.custom_ops import scaled_rows

    def fn(x, s):
        a = x.sin() * 2
        b = scaled_rows(a, s, 2)
        return b.cos() + x.exp()[:2]

    jfn = thunder.jit(fn, executors=["torchcompile"])
    x, s = torch.randn(4, 3), torch.tensor(1.5)
    torch.testing.assert_close(jfn(x, s), fn(x, s))
    _verify(jfn)
    r0, r1 = _regions(jfn)
    # exp(x)[:2] does not need the operator: it joins the first region, which returns it
    assert _members(r0) == ["sin", "mul", "exp", "getitem"]
    assert [p.name for p in r0.args] == ["x"] and [p.name for p in r0.output] == ["t1", "t5"]
    assert _members(r1) == ["cos", "add"] and [p.name for p in r1.args] == ["t2", "t5"]
    ids = [b.sym.id for b in thunder.last_traces(jfn)[-1].bound_symbols if not b.has_tag(Tag.DEL)]
    assert ids[1] == "torch.ops.thunder_test.scaled_rows.default"


def test_an_op_with_a_long_decomposition_is_left_to_torchs_kernel():
    """``torch.gcd`` decomposes into Euclid's steps for the widest integers (hundreds of prims):
    Inductor took minutes to compile them; torch's kernel runs it whole, the rest is fused."""

    def f(a, b, x):
        return torch.gcd(a, b) + torch.lcm(a, b), (x * 2).sin() + 1

    a, b, x = torch.tensor([12, 18, 0, -7]), torch.tensor([8, 27, 5, 21]), torch.randn(4)
    jf = thunder.jit(f, executors=["torchcompile", "torch"])
    got, expected = jf(a, b, x), f(a, b, x)
    torch.testing.assert_close(got, expected)
    trace = thunder.last_traces(jf)[-1]
    regions = [b for b in trace.bound_symbols if b.sym.name.startswith("TorchCompile")]
    assert regions and not any("gcd" in s.sym.id for r in regions for s in r.subsymbols)
    assert any(b.sym.id.endswith("gcd") for b in trace.bound_symbols)
