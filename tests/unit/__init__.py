"""Unit tests, without an engine, laid out like the code.

tests/unit/<layer>/test_<module>.py tests src/lsiorm/_<layer>/<module>.py, and
test_<module>_<aspect>.py one aspect of it; a file named after a concept (key order, pending
slots, the bad-input sweep) tests one that spans several modules of its layer.
"""
