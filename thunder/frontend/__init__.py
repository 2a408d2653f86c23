"""Acquisition: run the user's Python with proxies and record prologue, computation and
epilogue traces."""
