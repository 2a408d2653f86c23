"""Measurements: the final traces run on real inputs (time per line, memory), the what-if of
other executors, and the traces of every rank of a distributed run. Each runs on copies or
restores what it touches."""
