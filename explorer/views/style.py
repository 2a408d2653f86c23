"""Colours, shapes and the stylesheet shared by the HTML views and the graph.

Every colour has a second cue that is not colour: executors and tags are written out as
text badges in the tree, and get a node shape / border style in the graph (an executor's
``drawing``, ``TAG_STYLE``), so the views read in greyscale and for colour-blind readers.

Each executor says how it is drawn (``Executor.drawing``, found by name in thunder's
registry); one that does not, or that this process does not know (a saved trace), is drawn
as ``OTHER_EXECUTOR``.
"""

from __future__ import annotations

from thunder.executors.registry import all_executors, find_executor

# (fill colour, border colour, graph shape, border style)
UNCLAIMED = ("#ffffff", "#777777", "box", "dashed")  # not claimed by any executor (yet)
OTHER_EXECUTOR = ("#dcecf9", "#1f5f99", "hexagon", "solid")

# tag -> (badge text, colour, graph shape or None, graph extra style)
TAG_STYLE: dict[str, tuple[str, str, str | None, str]] = {
    "tensor_subclass": ("subclass", "#b0127a", "octagon", "bold"),
    "flatten_tensor_subclass": ("flatten", "#b0127a", "invtrapezium", "bold"),
    "unflatten_tensor_subclass": ("unflatten", "#b0127a", "trapezium", "bold"),
    "dataclass_new": ("dataclass", "#00796b", "note", "bold"),
    "writeback": ("write-back", "#c62828", "cds", "bold"),
    "fusion": ("fusion", "#2e7d32", None, "bold"),
    "backward": ("backward", "#1565c0", None, ""),
    "saved_for_backward": ("saved", "#a66b00", None, ""),
    "recomputed": ("recomputed", "#6a1b9a", None, ""),
    "prologue_check": ("check", "#666666", "diamond", ""),
    "unpack": ("unpack", "#666666", "invhouse", ""),
    "inplace": ("in-place", "#c62828", None, ""),
    "del": ("del", "#999999", "plaintext", ""),
    "communication": ("collective", "#e65100", "parallelogram", "bold"),
}


def executor_style(executor: str | None) -> tuple[str, str, str, str]:
    """How the executor named ``executor`` is drawn: (fill, border, graph shape, border style)."""
    if executor is None:
        return UNCLAIMED
    found = find_executor(executor)
    d = found.drawing if found is not None else None
    return (d.fill, d.border, d.shape, d.line) if d is not None else OTHER_EXECUTOR


def executor_class(executor: str | None) -> str:
    """The CSS class of an executor's badge: its own where the stylesheet has a rule for it."""
    found = find_executor(executor)
    return f"x-{css_class(executor)}" if found is not None and found.drawing is not None else "x-other"


CSS = """
.thx{font:13px/1.45 -apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1b1b}
.thx code,.thx .ln,.thx pre{font:12px/1.45 "SFMono-Regular",Menlo,Consolas,monospace}
.thx pre{margin:2px 0;white-space:pre;overflow-x:auto;background:#f7f7f7;padding:6px;border-radius:4px}
.thx .tree{max-height:640px;overflow:auto;border:1px solid #ddd;border-radius:4px;padding:4px 6px}
.thx .kids{margin-left:1.3em;border-left:1px dotted #bbb;padding-left:.4em}
.thx details>summary{cursor:pointer;list-style-position:outside;margin-left:1em}
.thx .leaf{margin-left:1em}
.thx .ty{color:#777}
.thx .mod>summary .mp{font-weight:600;color:#0d47a1}
.thx .mc{color:#37474f;background:#eceff1}
.thx .b{display:inline-block;border:1px solid;border-radius:3px;padding:0 3px;margin-left:4px;
  font-size:11px;line-height:14px}
.thx .src{color:#1f5f99;margin-left:6px;font-size:11px}
.thx .via{color:#5d4037;border-style:dotted}
.thx details.dels>summary{color:#777}
.thx .tm{color:#7b1fa2;margin-left:6px;font-size:11px;font-weight:600}
.thx .more{color:#777;font-style:italic;margin-left:1em}
.thx .hit>summary .ln,.thx .leaf.hit .ln{background:#fff59d;outline:1px solid #fbc02d}
.thx .sel>summary .ln,.thx .leaf.sel .ln{background:#bbdefb;outline:2px solid #1976d2}
.thx .added>summary .ln,.thx .leaf.added .ln{background:#e6ffec}
.thx .rewritten>summary .ln,.thx .leaf.rewritten .ln{background:#fff8c5}
.thx .del{color:#999}
.thx .hd{font-weight:600;margin:6px 0 2px}
.thx .note{color:#555;font-size:12px}
.thx .warn{color:#a15c00}
.thx .err{color:#b71c1c}
.thx table.kv{border-collapse:collapse;font-size:12px}
.thx table.kv td,.thx table.kv th{border:1px solid #ddd;padding:1px 6px;text-align:left;vertical-align:top}
.thx .dre{color:#8250df}.thx .dadd{color:#1a7f37}.thx .drem{color:#cf222e}.thx .dhunk{color:#8250df}
.thx .passes span{display:inline-block;margin:1px 2px;padding:0 4px;border-radius:3px;border:1px solid #ccc}
.thx .passes .cur{border-color:#1976d2;background:#e3f2fd;font-weight:600}
.thx .passes .same{color:#999;border-style:dashed}
.thx .graph svg{max-width:100%;height:auto}
.thx .slow{background:#ffcdd2;font-weight:600}
.thx .ranks{display:grid;grid-template-columns:repeat(auto-fit,minmax(380px,1fr));gap:8px}
"""


def css_class(name: str | None) -> str:
    """A class-safe spelling of an executor or tag name."""
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in str(name))


def stylesheet() -> str:
    """The explorer's CSS, with one rule per executor and tag badge."""
    rules = [CSS.strip()]
    for ex in all_executors():
        if ex.drawing is not None:
            rules.append(
                f".thx .x-{css_class(ex.name)}{{color:{ex.drawing.border};background:{ex.drawing.fill}}}"
            )
    rules.append(f".thx .x-other{{color:{OTHER_EXECUTOR[1]};background:{OTHER_EXECUTOR[0]}}}")
    for tag, (_, colour, _, _) in TAG_STYLE.items():
        rules.append(f".thx .g-{css_class(tag)}{{color:{colour}}}")
    return "\n".join(rules)
