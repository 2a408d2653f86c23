"""The Python executor's implementations, by what they do.

``checks.py``: the prologue's checks of the inputs (raising ``PrologueCheckFailed``);
``unpacking.py``: reading inputs by provenance and taking tensor subclasses apart and back
together; ``epilogue.py``: the epilogue's write-backs onto the user's objects and the
constructors of its return values. ``thunder.executors.pythonex`` registers them as the
executor's implementations.
"""
