"""Unit tests of lsiorm._requests."""
