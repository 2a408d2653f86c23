"""The bridge to ``torch.autograd``: one ``autograd.Function`` per compiled entry, the call
around it, what they share, backwards made on demand from the inputs, and gradients averaged
across ranks into a ``.grad`` already held."""
