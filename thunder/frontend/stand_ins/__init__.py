"""What the traced code holds in place of the user's things: wrappers of object inputs,
tracked copies of containers, counters that change between calls, objects made while tracing, the
object a jitted bound method belongs to, and each input's provenance (``Unpack``)."""
