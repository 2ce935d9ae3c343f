"""Unit tests of lsiorm._query."""
