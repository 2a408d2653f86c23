"""``make demo``: write the explorer's self-contained report for the tutorial's example.

A small classifier module returns a dataclass (so the epilogue builds it); it is called with
two batch sizes (so the cache holds two entries and says why the second was compiled) and
every line of its final traces is timed. The page needs no network to be read.

    python bench/demo.py report.html
"""

from __future__ import annotations

import dataclasses
import os
import sys

# bench/explorer.py would shadow the explorer package (this script's folder comes first on
# sys.path): put the repository first instead.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
sys.path.insert(0, os.path.dirname(_here))

import torch  # noqa: E402

import explorer  # noqa: E402
import thunder  # noqa: E402


@dataclasses.dataclass
class Prediction:
    probs: torch.Tensor
    label: str


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.fc1(x))
        return Prediction(probs=self.fc2(h).softmax(-1), label="classes")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    torch.manual_seed(0)
    jm = thunder.jit(Classifier().eval())
    jm(torch.randn(4, 16))
    x = torch.randn(8, 16)
    ex = explorer.explore(jm, args=(x,))  # runs on x (a second cache entry) and times each line
    explorer.to_html(ex, argv[1])
    print(f"wrote {argv[1]}: {thunder.compile_stats(jm).cache_misses} compiled entries, open it in a browser")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
