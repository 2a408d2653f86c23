"""thunder behind torch.compile: a Dynamo frontend for programs ``thunder.jit`` refuses.

    from thunder.dynamo import ThunderCompiler, thunderfx

    cfn = thunderfx(fn, executors=["torchcompile"])      # the one-call form
    cfn(x)
    cfn.pieces        # the FX graphs Dynamo made, in compile order, each run by thunder.jit
    cfn.last_run      # the pieces and graph breaks of the last call, in execution order
    cfn.breaks        # why Dynamo split the program, with the user's source line
    cfn.fallbacks     # the pieces thunder could not take (run eagerly) and why
    cfn.skipped       # functions Dynamo gave up on (plain Python, eager ops) and why

    torch.compile(fn, backend=ThunderCompiler(executors=["torchcompile"]))  # the backend itself

``thunder.jit`` runs the user's Python once and refuses what it cannot trace (a branch on a
tensor's value, ``.item()`` used as a number, Python that must run on every call). Dynamo splits
such programs at those points (graph breaks) and runs the Python between the pieces itself, with
its own guards; each piece is an FX ``GraphModule`` that thunder compiles, backward included.
"""

from thunder.dynamo.breaks import GraphBreak, SkippedFrame
from thunder.dynamo.compiler import Piece, ThunderCompiler
from thunder.dynamo.program import ThunderFX, thunderfx

__all__ = ["GraphBreak", "Piece", "SkippedFrame", "ThunderCompiler", "ThunderFX", "thunderfx"]
