"""The IR: proxies, symbols, bound symbols, traces, printing and pytree helpers."""
