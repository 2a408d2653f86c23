"""What the traced Python does besides torch calls, as eager does it on every call: writes into
state it did not make (recorded, replayed by the epilogue), prints, log records and warnings,
host state that is refused (clocks, Python's RNG), C objects and foreign iterators, ``type()``."""
