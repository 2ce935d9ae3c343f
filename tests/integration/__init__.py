"""Integration tests: each takes an engine (the `backend` fixture) and runs once per engine."""
