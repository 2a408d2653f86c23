"""The Python executor's implementations, by what they do.

``checks.py``: the prologue's checks of the inputs (raising ``PrologueCheckFailed``);
``unpacking.py``: reading inputs by provenance and taking tensor subclasses apart and back
together; ``epilogue.py``: the epilogue's write-backs onto the user's objects and the
constructors of its return values; ``overlap.py``: whether two tensors share memory (the
aliasing check, and acquisition's own test); ``shortcuts.py``: each check's first test, as the
source the compiled prologue runs. ``thunder.executors.pythonex`` registers them as the
executor's implementations.
"""
