"""Views of several traces in columns: a forward and its backward (``pair``), the ranks of a
distributed run (``ranks``), two compilations (``compilations``)."""
