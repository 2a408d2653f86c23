"""The runtime: ``thunder.jit`` (acquire, passes, compile, cache), ``ThunderModule``, the cache,
the inspection API, the check of a program's collectives across ranks, and transformers'
``generate()`` with compiled forwards."""
