"""Executors: who runs each BoundSymbol. ``torch`` runs everything; fusion executors
(nvFuser, torch.compile) claim regions. ``claim.py`` is the pass that asks them."""
