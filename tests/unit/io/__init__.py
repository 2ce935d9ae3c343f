"""Unit tests of lsiorm._io."""
