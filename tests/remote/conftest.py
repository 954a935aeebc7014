"""The fixtures of the ssh layer's tests: the test login node (tests/ssh_login.py) and
a connection to it."""

from __future__ import annotations

import pytest

from ssh_login import Login, find_login


@pytest.fixture(scope="session")
def login() -> Login:
    return find_login()


@pytest.fixture
def conn(login: Login):  # type: ignore[no-untyped-def]
    c = login.connection()
    yield c
    c.close()
