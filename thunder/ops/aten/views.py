"""Views of aten operators beyond the shape section's: diagonals, sliding windows, views with
several outputs (``unbind``, ``split_with_sizes``), and the scatters that write a value where
a view reads (``select_scatter``, ``slice_scatter``, ``diagonal_scatter``); with how a write
into a view they made reaches its base (``VIEW_WRITES``, ``PIECE_WRITES``)."""

from __future__ import annotations

VIEW_WRITES: dict = {}
PIECE_WRITES: dict = {}
