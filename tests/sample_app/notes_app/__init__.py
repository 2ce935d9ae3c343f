"""A tiny app that keeps notes in DynamoDB through lsiorm: lsiorm's sample of a user's app.

It uses lsiorm's public API only; its tests (in ``tests/``) use the pytest plugin's fixtures,
its fault injection among them, as an app's own test suite would.
"""
