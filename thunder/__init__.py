"""thunder."""
