"""The epilogue: the write-backs the function made, then the return value rebuilt from what
the function really returned."""
