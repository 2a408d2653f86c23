"""What runs in the notebook kernel: the interactive explorer widget and its panes, the
what-if and rank controls, the ``%thunder_trace`` magic, the displays, and the explorer of a
thunderfx program."""
