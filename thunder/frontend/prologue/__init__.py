"""The prologue: the inputs with their provenance and the checks a cached call must pass (the
inputs' metadata, the Python state the code read: module attributes, globals, closure cells,
defaults)."""
