"""A search index of one pass, so that the explorer's search answers in milliseconds.

Searching a 40,000-line program by walking its BoundSymbols (and their subsymbols: 165,000
nodes) and reading each line took 0.3-0.6 s of CPU per query even with every line printed
already. The index holds every node at any depth in trace order (parents first) in chunks:
per chunk one lowercased string of the nodes' symbols, lines and source file names that
``str.find`` scans in C, and proxy name -> the nodes that read or make it. Chunks are made as
a search first needs them, so a first search that finds its hits early reads no more of the
trace than a walk would; later searches read the chunks already made.
"""

from __future__ import annotations

import bisect
import os
import weakref

from explorer.model.nodes import Node
from explorer.model.passes import PassModel
from explorer.model.traces import collector_paused

CHUNK = 4096  # nodes per chunk
_INDEXES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # PassModel -> SearchIndex


def index_of(p: PassModel) -> SearchIndex:
    """The index of ``p`` (made on first use, kept while ``p`` lives)."""
    index = _INDEXES.get(p)
    if index is None:
        index = _INDEXES[p] = SearchIndex(p)
    return index


class _Chunk:
    __slots__ = ("nodes", "starts", "text", "by_name")

    def __init__(self, nodes: list[Node]):
        self.nodes = nodes
        self.starts: list[int] = []
        self.by_name: dict[str, list[int]] = {}
        parts: list[str] = []
        at = 0
        for k, n in enumerate(nodes):
            src = n.source
            # fields split by a tab: a query (one line, no tab) matches inside one field; the
            # location as the tree shows it (``In[3] line 2``, ``model.py:12``) is one
            where = f"{os.path.basename(src.file)}\t{src.location()}" if src is not None else ""
            text = f"{n.sym_id}\t{n.line}\t{where}\n".lower()
            self.starts.append(at)
            at += len(text)
            parts.append(text)
            for name in dict.fromkeys(n.inputs + n.outputs):
                self.by_name.setdefault(name, []).append(k)
        self.text = "".join(parts)


class SearchIndex:
    def __init__(self, p: PassModel):
        self._walk = p.walk()
        self._chunks: list[_Chunk] = []
        self._done = False

    def _chunks_from(self, i: int):
        """The chunks from the i-th on, made as they are asked for."""
        while True:
            if i < len(self._chunks):
                yield self._chunks[i]
                i += 1
                continue
            if self._done:
                return
            with collector_paused():
                nodes = [n for _, n in zip(range(CHUNK), self._walk)]
                if len(nodes) < CHUNK:
                    self._done = True
                if not nodes:
                    return
                self._chunks.append(_Chunk(nodes))

    def containing(self, piece: str, limit: int | None = None) -> list[Node]:
        """Nodes whose symbol, line or file name contains ``piece`` (lowercase, without a tab
        or a newline), the first ``limit`` of them in trace order."""
        if "\t" in piece or "\n" in piece:
            raise ValueError("explorer: a search is one line without tabs")
        out: list[Node] = []
        for c in self._chunks_from(0):
            at, text, starts = 0, c.text, c.starts
            while True:
                if limit is not None and len(out) >= limit:
                    return out
                j = text.find(piece, at)
                if j < 0:
                    break
                k = bisect.bisect_right(starts, j) - 1
                out.append(c.nodes[k])
                at = starts[k + 1] if k + 1 < len(starts) else len(text)
        return out

    def with_name(self, name: str, limit: int | None = None) -> list[Node]:
        """Nodes that read or make the proxy ``name``, the first ``limit`` in trace order."""
        out: list[Node] = []
        for c in self._chunks_from(0):
            out.extend(c.nodes[k] for k in c.by_name.get(name, ()))
            if limit is not None and len(out) >= limit:
                return out[:limit]
        return out
