"""Shared pytest fixtures."""

import pytest


@pytest.fixture(scope="session")
def embedder():
  """The real sentence embedder, loaded once per test session (5-9 s)."""
  from crsec_concordia.embedding import shared_embedder  # pylint: disable=import-outside-toplevel
  return shared_embedder()
