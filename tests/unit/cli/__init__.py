"""Unit tests of the command line (lsiorm._cli, lsiorm._cli_text), without an engine."""
