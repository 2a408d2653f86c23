"""``%thunder_trace`` in a real IPython shell: a good call, failing calls, the cell form."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import explorer.notebook.magic as magic

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def ip():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "explorer")
    shell.run_cell(
        "import torch\n"
        "def f(x):\n"
        "    return (x.cos() + 1).softmax(-1)\n"
        "def bad(x):\n"
        "    if x.sum() > 0:\n"
        "        return x\n"
        "    return -x\n",
        store_history=False,
    )
    yield shell


def _run(ip, src):
    with capture_output() as cap:
        res = ip.run_cell(src, store_history=False)
    assert res.success, res.error_in_exec  # the kernel never sees an exception
    return [o.data for o in cap.outputs]


def test_good_call_shows_the_explorer(ip):
    (out,) = _run(ip, "%thunder_trace --view source --depth 2 f(torch.ones(2, 3))")
    assert WIDGET in out and "<details" in out["text/html"]
    ex = magic.last_explorer
    assert ex.view.value == "source" and ex.depth.value == 2
    assert "def computation(x):" in ex.main.value
    assert ex.model.timings["computation"]  # measured on the CPU
    assert ex.result.shape == (2, 3)


def test_user_error_is_shown_with_its_traceback(ip):
    (out,) = _run(ip, "%thunder_trace bad(torch.ones(2))")
    assert WIDGET not in out
    text = out["text/plain"]
    assert "%thunder_trace: bad(torch.ones(2)) failed" in text
    assert "if x.sum() > 0:" in text  # the user's own line, first
    assert "DataDependentError" in text
    assert "full traceback" in out["text/html"]
    # and the kernel is fine afterwards
    (again,) = _run(ip, "%thunder_trace f(torch.ones(4))")
    assert WIDGET in again


def test_bad_arguments_and_options(ip):
    (out,) = _run(ip, "%thunder_trace f(no_such_name)")
    assert "NameError" in out["text/plain"]
    (out,) = _run(ip, "%thunder_trace --view trees f(torch.ones(2))")
    assert (
        "--view must be one of overview, tree, graph, source, diff, timing, pair, pair-graph"
        in out["text/plain"]
    )
    (out,) = _run(ip, "%thunder_trace f")
    assert "expected a call such as fn(x)" in out["text/plain"]
    (out,) = _run(ip, "%thunder_trace --executors nope f(torch.ones(2))")
    assert "unknown executor 'nope'" in out["text/plain"]


def test_cuda_without_a_gpu_says_so(ip):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    (out,) = _run(ip, "%thunder_trace --device cuda f(torch.ones(2))")
    assert "--device cuda: no CUDA device is available here" in out["text/plain"]


def test_cell_magic(ip):
    (out,) = _run(
        ip,
        "%%thunder_trace --view diff\n"
        "class M(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.tanh(x * 3)\n"
        "m = M()\n"
        "m(torch.ones(3))\n",
    )
    assert WIDGET in out
    ex = magic.last_explorer
    assert ex.view.value == "diff"
    n = ex.model.series["computation"].final.nodes[0]
    assert n.source.code == "return torch.tanh(x * 3)"  # the cell's own source is readable
    assert "m" in ip.user_ns  # the statements before the call ran in the user's namespace
    (out,) = _run(ip, "%%thunder_trace\nx = 1\n")
    assert "the last line of a %%thunder_trace cell must be a call" in out["text/plain"]


def test_parse_line():
    opts, call = magic.parse_line("--device=cpu --executors torch,python --depth 3 fn(a, b=2)")
    assert (opts.device, opts.executors, opts.depth, call) == ("cpu", ["torch", "python"], 3, "fn(a, b=2)")
    with pytest.raises(magic.MagicUsageError, match="--depth takes a number"):
        magic.parse_line("--depth x fn()")
    with pytest.raises(magic.MagicUsageError, match="unknown option --colour"):
        magic.parse_line("--colour red fn()")
