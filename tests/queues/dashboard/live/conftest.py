from __future__ import annotations

import threading

import pytest

from queues.store.listen import STOP_CHECK_SECONDS


@pytest.fixture(autouse=True)
def listeners_closed():
    """Each test waits for the LISTEN threads its aggregators stopped to close their
    connections (else the test database cannot be dropped: "accessed by other users")."""
    yield
    for thread in threading.enumerate():
        if thread.name == "hammerweb-listen":
            thread.join(timeout=STOP_CHECK_SECONDS * 5)
            assert not thread.is_alive(), "a LISTEN thread did not stop"
