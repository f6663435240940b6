"""models/chat_post.py: the chat wire's two transports answer alike.

A plain http:// endpoint with no proxy before it is posted to on each
thread's kept http.client connection, any other through httpx2; the
answers, the openai exception kinds and the retries must not tell them
apart (tests/test_openai_model.py checks the model over the first).
"""

from __future__ import annotations

import openai
import pytest

from crsec_concordia.models import chat_post
from tests.fake_openai import FakeOpenAI, Reply, error

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def server():
  fake = FakeOpenAI().start()
  try:
    yield fake
  finally:
    fake.stop()


def posters(server, **kwargs) -> list[chat_post.ChatPoster]:
  kwargs = {"timeout": 5.0, "max_retries": 2, "trust_env": False, **kwargs}
  plain = chat_post.ChatPoster(server.base_url, "key", **kwargs)
  pooled = chat_post.ChatPoster(server.base_url, "key", **kwargs)
  pooled._kept = None  # pylint: disable=protected-access
  return [plain, pooled]


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch):
  monkeypatch.setattr(chat_post, "FIRST_RETRY_DELAY", 0.01)


def test_both_transports_give_the_same_answer_and_headers(server):
  answers = []
  for poster in posters(server):
    server.script(Reply("fine"))
    answers.append(poster.post(BODY, {"X-Call": "c1"}))
  assert [chat_post.answer_text(a) for a in answers] == ["fine", "fine"]
  assert answers[0]["usage"] == answers[1]["usage"]
  sent = server.chat_requests()
  assert [r.body for r in sent] == [BODY, BODY]
  assert all(r.headers["authorization"] == "Bearer key"
             and r.headers["x-call"] == "c1" for r in sent)


def test_a_thread_keeps_its_connection(server):
  plain = posters(server)[0]
  server.script(Reply("a"), Reply("b"))
  plain.post(BODY)
  kept = plain._kept._local.connection  # pylint: disable=protected-access
  plain.post(BODY)
  assert plain._kept._local.connection is kept  # pylint: disable=protected-access


@pytest.mark.parametrize("status, kind", [
    (401, openai.AuthenticationError), (404, openai.NotFoundError),
    (400, openai.BadRequestError)])
def test_an_error_status_is_the_openai_kind_and_not_retried(server, status,
                                                            kind):
  for poster in posters(server):
    server.script(error(status, "no"))
    with pytest.raises(kind, match=f"Error code: {status} - no"):
      poster.post(BODY)
  assert len(server.chat_requests()) == 2


def test_a_500_is_retried_then_answered(server):
  for poster in posters(server):
    server.script(error(500, "busy"), Reply("late"))
    assert chat_post.answer_text(poster.post(BODY)) == "late"
  assert len(server.chat_requests()) == 4


def test_a_refused_connection_is_a_connection_error():
  poster = chat_post.ChatPoster("http://127.0.0.1:9/v1", "k", timeout=2.0,
                                max_retries=0, trust_env=False)
  with pytest.raises(openai.APIConnectionError):
    poster.post(BODY)


def test_a_proxy_variable_sends_plain_http_through_httpx2(monkeypatch):
  monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
  monkeypatch.delenv("NO_PROXY", raising=False)
  monkeypatch.delenv("no_proxy", raising=False)
  assert not chat_post._plain("http://10.1.2.3:8000/v1", True)  # pylint: disable=protected-access
  assert chat_post._plain("http://10.1.2.3:8000/v1", False)  # pylint: disable=protected-access
  assert not chat_post._plain("https://api.example.com/v1", False)  # pylint: disable=protected-access
  monkeypatch.setenv("NO_PROXY", "10.1.2.3")
  assert chat_post._plain("http://10.1.2.3:8000/v1", True)  # pylint: disable=protected-access
