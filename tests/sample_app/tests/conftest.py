import pytest
from notes_app.store import attachments, notes


@pytest.fixture
def lsiorm_tables():
    return [notes, attachments]
