"""Notebook displays: thunder's objects shown by the explorer once it is imported.

thunder never imports the explorer. Importing ``explorer`` (or ``%load_ext explorer``)
registers IPython's HTML formatters for ``Trace``, jitted functions and jitted modules, by
name. Without the explorer a trace shows as its printed program (plain text).
"""

from __future__ import annotations

from explorer.views import html

# (module, class name) -> the function of explorer.views.html that renders it
_DISPLAYS = (
    ("thunder.core.trace", "Trace", "trace_html"),
    ("thunder.runtime.jit", "ThunderFunction", "compilation_html"),
    ("thunder.runtime.module", "ThunderModule", "compilation_html"),
)


# the explorer's own results (module, class name, view module, function that renders it)
_RESULT_DISPLAYS = (
    ("explorer.model.memory", "MemoryProfile", "explorer.views.memory", "memory_html"),
    ("explorer.measure.whatif", "Comparison", "explorer.views.whatif", "comparison_html"),
)


def _render_with(view: str, name: str):
    def render(obj) -> str:
        import importlib

        return getattr(importlib.import_module(view), name)(obj)

    render.__name__ = name
    return render


def _render(name: str):
    def render(obj) -> str:
        return getattr(html, name)(obj)

    render.__name__ = name
    return render


def register_displays(ipython=None) -> bool:
    """Register the HTML displays with ``ipython`` (default: the running shell, if any)."""
    if ipython is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        ipython = get_ipython()
    if ipython is None:
        return False
    formatter = ipython.display_formatter.formatters["text/html"]
    for module, cls, fn in _DISPLAYS:
        formatter.for_type_by_name(module, cls, _render(fn))
    for module, cls, view, fn in _RESULT_DISPLAYS:
        formatter.for_type_by_name(module, cls, _render_with(view, fn))
    return True
