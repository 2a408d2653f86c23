"""Torch calls while tracing: the acquisition mode (``mode.py``) and what it does with each
kind of call: metadata queries, in-place writes and views, layout and value reads, addresses,
custom autograd Functions, global torch state."""
