"""Unit tests of lsiorm._model."""
