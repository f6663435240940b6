"""Shared pytest fixtures."""

import pytest


@pytest.fixture(scope="session")
def embedder():
  """The real sentence embedder, loaded once per test session (5-9 s)."""
  from crsec_concordia.embedding import shared_embedder  # pylint: disable=import-outside-toplevel
  return shared_embedder()


@pytest.fixture
def server():
  """A fake OpenAI-compatible server over real HTTP on loopback."""
  from tests.fake_openai import FakeOpenAI  # pylint: disable=import-outside-toplevel
  fake = FakeOpenAI().start()
  try:
    yield fake
  finally:
    fake.stop()


@pytest.fixture(autouse=True)
def own_data_dir(tmp_path_factory, monkeypatch):
  """The user's data directory (platformdirs: calibrations) a fresh one
  per test, so a person's own calibrations never reach a test."""
  monkeypatch.setenv("XDG_DATA_HOME",
                     str(tmp_path_factory.mktemp("user_data")))


@pytest.fixture(autouse=True)
def requests_allowed():
  """Each test starts with model requests allowed: a test of an interrupted
  command (models/stopping.py) leaves the process's flag set, as the
  command's own process would at its end."""
  from crsec_concordia.models import stopping  # pylint: disable=import-outside-toplevel
  stopping.allow_requests()
  yield
  stopping.allow_requests()
