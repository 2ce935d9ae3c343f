"""Unit tests of the sessions (lsiorm._session, lsiorm._session_methods), without an engine."""
