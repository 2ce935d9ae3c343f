"""Whole-package checks: docs, examples, layers, code shape, public API, plugin, deployment."""
