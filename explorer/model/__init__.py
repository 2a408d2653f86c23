"""The explorer's model: plain data about a compilation's traces (``TraceModel``, passes,
nodes, named values, modules, forward/backward pairs, memory computed per line, collectives),
read from the compiler and saved as JSON. Nothing here imports a view."""
