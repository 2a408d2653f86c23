"""Whole-trace goldens and the round trip: printed source, executed, gives eager's values."""

from __future__ import annotations

import re

import torch

import thunder
from thunder.core.verify import verify


def fn(x):
    return x.sin() * 2 + 1


COMPUTATION_FIRST = """\
import torch
import thunder.ops.ltorch as ltorch

def computation(x):
  # x: "cpu f32[3]"
  t0 = ltorch.sin(x)  # t0: "cpu f32[3]"
    # t0 = prims.sin(x)  # t0: "cpu f32[3]"
  t1 = ltorch.mul(t0, 2)  # t1: "cpu f32[3]"
    # t1 = prims.mul(t0, 2)  # t1: "cpu f32[3]"
  t2 = ltorch.add(t1, 1)  # t2: "cpu f32[3]"
    # t2 = prims.add(t1, 1)  # t2: "cpu f32[3]"
  return (t2,)
"""

COMPUTATION_LAST = """\
# Constructed by Delete Last Used
import torch

def computation(x):
  # x: "cpu f32[3]"
  t0 = torch.sin(x)  # t0: "cpu f32[3]"
    # t0 = ltorch.sin(x)  # t0: "cpu f32[3]"
      # t0 = prims.sin(x)  # t0: "cpu f32[3]"
  t1 = torch.mul(t0, 2)  # t1: "cpu f32[3]"
    # t1 = ltorch.mul(t0, 2)  # t1: "cpu f32[3]"
      # t1 = prims.mul(t0, 2)  # t1: "cpu f32[3]"
  del t0
  t2 = torch.add(t1, 1)  # t2: "cpu f32[3]"
    # t2 = ltorch.add(t1, 1)  # t2: "cpu f32[3]"
      # t2 = prims.add(t1, 1)  # t2: "cpu f32[3]"
  del t1
  return (t2,)
"""

PROLOGUE_LAST = """\
# Constructed by Transform for execution
import torch
import thunder.executors.pythonex as pythonex

def prologue(*args, **kwargs):
  pythonex.check_len(args, 1)
    # prims.check_len(args, 1)
  pythonex.check_keys(kwargs, ())
    # prims.check_keys(kwargs, ())
  x = args[0]  # x: "cpu f32[3]"
    # x = prims.unpack_item(args, 0)  # x: "cpu f32[3]"
  pythonex.check_tensor(x, (3,), torch.float32, 'cpu', False)
    # prims.check_tensor(x, (3,), torch.float32, 'cpu', False)
  pythonex.check_grad_enabled(True)
    # prims.check_grad_enabled(True)
  pythonex.check_autocast(())
    # prims.check_autocast(())
  pythonex.check_default_dtype(torch.float32)
    # prims.check_default_dtype(torch.float32)
  return ((x,), ())
"""

EPILOGUE_LAST = """\
# Constructed by Transform for execution
import torch

def epilogue(t2):
  # t2: "cpu f32[3]"
  return t2
"""


def test_goldens_elementwise():
    jfn = thunder.jit(fn)
    jfn(torch.ones(3))
    traces = thunder.last_traces(jfn)
    assert str(traces[0]) == COMPUTATION_FIRST
    assert str(traces[-1]) == COMPUTATION_LAST
    assert [t.provenance.pass_name for t in traces[1:]] == [
        "Dead Code Elimination",
        "Transform for execution",
        "Delete Last Used",
    ]
    assert str(thunder.last_prologue_traces(jfn)[-1]) == PROLOGUE_LAST
    assert str(thunder.last_epilogue_traces(jfn)[-1]) == EPILOGUE_LAST


def test_printing_is_deterministic_across_compilations():
    a, b = thunder.jit(fn), thunder.jit(fn)
    a(torch.ones(3))
    b(torch.ones(3))
    assert [str(t) for t in thunder.last_traces(a)] == [str(t) for t in thunder.last_traces(b)]


def test_every_pass_verifies_and_round_trips():
    def g(x, y):
        z = torch.where(x > 0, x, y) * 3
        return z.sum(), z.transpose(0, 1)[1:], torch.cat([x, y], 1)

    x, y = torch.randn(3, 4), torch.randn(3, 4)
    jfn = thunder.jit(g)
    expected = g(x, y)
    torch.testing.assert_close(jfn(x, y), expected)
    for trace in thunder.last_traces(jfn):
        verify(trace)
        # executing the printed source of every pass gives the same values
        torch.testing.assert_close(trace.python_callable()(x, y), tuple(expected))


def test_compiled_code_has_the_printed_programs_line_numbers():
    # the callable is compiled without the subsymbol comments (empty lines in their place) and
    # without type comments: every line number still means the same line, and the BoundSymbol,
    # of str(trace)
    def g(x):
        with torch.no_grad():
            y = torch.softmax(x, 0)
        return torch.nn.functional.gelu(y) + x

    jfn = thunder.jit(g)
    jfn(torch.randn(4))
    blanks = shortcuts = 0
    for trace in thunder.last_traces(jfn) + thunder.last_prologue_traces(jfn):
        full = trace.program()
        compiled = trace.python_callable().__thunder_program__
        assert (compiled.spans, compiled.line_map, compiled.body_start) == (
            full.spans,
            full.line_map,
            full.body_start,
        )
        lines, full_lines = compiled.source.splitlines(), full.source.splitlines()
        assert len(lines) == len(full_lines)
        blanked = [f for c, f in zip(lines, full_lines) if c != f and c == ""]
        assert all(f.lstrip().startswith("# ") for f in blanked)
        # the other lines that differ are the same code without its type comment, a check
        # after its shortcut (``if not (...): pythonex.check_len(args, 1)``), or an aten
        # operator called through its C++ entry point (``_aten_sum_dim_IntList(``)
        for c, f in zip(lines, full_lines):
            if c != f and c != "":
                shortcut = re.fullmatch(r"(\s*)if not \(.*\): (pythonex\.check_.*)", c)
                code = shortcut[1] + shortcut[2] if shortcut else re.sub(r"\b_aten_\w+\(", "ATEN(", c)
                full_code = re.sub(r"\btorch\.ops\.aten\.[\w.]+\(", "ATEN(", f)
                assert full_code == code or full_code.startswith(code + "  # "), (c, f)
                shortcuts += shortcut is not None
        blanks += len(blanked)
    assert blanks > 0 and shortcuts > 0


def test_source_lines_are_kept_through_every_pass():
    def g(x):
        y = x.cos()  # the line the trace must remember
        return y + 1

    jfn = thunder.jit(g)
    jfn(torch.ones(2))
    for trace in thunder.last_traces(jfn):
        cos = [
            b
            for b in trace.bound_symbols
            if "cos" in b.sym.name or any("cos" in s.sym.name for s in b.subsymbols)
        ]
        assert cos and cos[0].source is not None
        assert cos[0].source.function == "g"
        assert "the line the trace must remember" in cos[0].source.line()


def test_names_stay_the_same_from_pass_to_pass():
    jfn = thunder.jit(fn)
    jfn(torch.ones(3))
    first, last = thunder.last_traces(jfn)[0], thunder.last_traces(jfn)[-1]
    outs = lambda t: [o.name for b in t.bound_symbols for o in b.flat_proxy_outs]  # noqa: E731
    assert outs(first) == outs(last) == ["t0", "t1", "t2"]


def test_no_grad_inside_the_traced_function_runs_under_no_grad():
    def g(x):
        with torch.no_grad():
            y = (x * 2).sin()
        return y + x

    x, xe = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    jfn = thunder.jit(g)
    jfn(x).sum().backward()
    g(xe).sum().backward()
    torch.testing.assert_close(x.grad, xe.grad)  # no gradient through the no_grad block
    text = str(thunder.last_traces(jfn)[-1])
    assert "  with torch.no_grad():\n    t0 = torch.mul(x, 2)" in text
    assert "\n  t2 = torch.add(t1, x)" in text
    assert torch.is_grad_enabled()


def test_enable_grad_inside_a_no_grad_call():
    def g(x):
        with torch.enable_grad():
            y = x * 3
        return y

    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        out = thunder.jit(g)(x)
        assert out.requires_grad == g(x).requires_grad


def test_a_long_trace_displays_its_head_in_a_notebook():
    from IPython.lib.pretty import pretty

    def g(x):
        for _ in range(40):
            x = x.sin()
        return x

    jfn = thunder.jit(g)
    jfn(torch.ones(2))
    t = thunder.last_traces(jfn)[-1]
    short = t.head(5)
    assert "# ... 74 more bound symbols" in short and short.endswith("  return (t39,)\n")
    assert short.count(" = torch.sin(") == 3  # three sins and two dels
    assert t.head(1000) == str(t) == pretty(t)
