"""Views of the model: plain text, static HTML (the tree, the pair, memory, ranks, what-if),
the graphviz graph, the self-contained report, and their shared style."""
