"""``torch.distributed`` while tracing: collectives as start/wait pairs in the trace, and the
modules DDP and FSDP2 wrap, traced with their semantics made explicit."""
