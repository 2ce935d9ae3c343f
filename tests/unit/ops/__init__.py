"""Unit tests of lsiorm._ops."""
