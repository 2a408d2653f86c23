"""Passes: pure ``Trace -> Trace`` functions, one per file."""
