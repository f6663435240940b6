"""One chat-completions request, posted as JSON bytes on `httpx2`.

Why not the `openai` client's `chat.completions.create`: for every request
it walks the parameters against their type annotations, builds its options
and request models and parses the answer into pydantic models, about two
milliseconds of CPU under the GIL per call (bench/society_scaling.py
--town; docs/measurements.md), which a thousand agents' threads need for
their own work. The chat wire is small (a JSON body in, `choices` and
`usage` out), so it is posted here on the HTTP library the `openai` client
itself uses (`httpx2`: connection pooling, timeouts, TLS, proxies), and
the client's behaviour is kept where the rest of the library relies on it:
its retry policy (connection errors, timeouts, 408, 409, 429 and 5xx, with
its backoff and `Retry-After`) and its exception classes, so that
models/endpoint_errors.py reads a failure as before. A plain `http://`
endpoint that no proxy stands before (a local server: vLLM, llama.cpp,
the embedded one) is posted to on each thread's kept connection
(models/plain_http.py: one send, a lean read), a fifth of `httpx2`'s CPU
time.
"""

from __future__ import annotations

import http.client
import json
import math
import random
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import httpx2
import openai

from crsec_concordia.models import plain_http

# The `openai` client's backoff: 0.5 s, 1 s, 2 s... at most 8 s, less a
# random quarter; a server's Retry-After up to a minute is honoured.
FIRST_RETRY_DELAY = 0.5
LONGEST_RETRY_DELAY = 8.0
LONGEST_RETRY_AFTER = 60.0

_STATUS_ERRORS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError, 401: openai.AuthenticationError,
    403: openai.PermissionDeniedError, 404: openai.NotFoundError,
    409: openai.ConflictError, 422: openai.UnprocessableEntityError,
    429: openai.RateLimitError}


def status_error(response: httpx2.Response) -> openai.APIStatusError:
  """The `openai` client's exception for an HTTP error answer, with its
  message ("Error code: 500 - what the server said")."""
  message = f"Error code: {response.status_code}"
  text = response.text.strip()
  body: Any = text
  try:
    body = json.loads(text)
  except ValueError:
    pass
  data = body.get("error", body) if isinstance(body, Mapping) else body
  said = data.get("message") if isinstance(data, Mapping) else None
  if isinstance(said, str) and said:
    message += f" - {said}"
  kind = _STATUS_ERRORS.get(response.status_code, (
      openai.InternalServerError if response.status_code >= 500
      else openai.APIStatusError))
  return kind(message, response=response, body=data)


def _retry_after(headers: httpx2.Headers) -> float | None:
  """The server's Retry-After (or retry-after-ms) in seconds, if it says."""
  try:
    if (ms := headers.get("retry-after-ms")) is not None:
      return float(ms) / 1000
    if (seconds := headers.get("retry-after")) is not None:
      return float(seconds)
  except ValueError:
    return None
  return None


def _worth_retrying(response: httpx2.Response) -> bool:
  """Whether an error answer is retried, as the `openai` client decides."""
  after = _retry_after(response.headers)
  if after is not None and math.isfinite(after) and after > LONGEST_RETRY_AFTER:
    return False
  said = response.headers.get("x-should-retry")
  if said in ("true", "false"):
    return said == "true"
  return response.status_code in (408, 409, 429) or response.status_code >= 500


def _pause(retry: int, headers: httpx2.Headers | None) -> float:
  after = _retry_after(headers) if headers is not None else None
  if after is not None and math.isfinite(after) and (
      0 < after <= LONGEST_RETRY_AFTER):
    return after
  wait = min(FIRST_RETRY_DELAY * 2.0 ** min(retry, 1000), LONGEST_RETRY_DELAY)
  return wait * (1 - 0.25 * random.random())


def answer_text(response: Any) -> str:
  """The first choice's text of a chat completion's JSON (None read as
  ""); ValueError when the JSON is not a chat completion."""
  try:
    text = response["choices"][0]["message"]["content"]
  except (KeyError, IndexError, TypeError) as e:
    raise ValueError(f"no choices[0].message.content ({e!r})") from None
  if text is not None and not isinstance(text, str):
    raise ValueError("choices[0].message.content is not text")
  return text or ""


def _plain(url: str, trust_env: bool) -> bool:
  """Whether `url` is plain HTTP that no proxy variable sends elsewhere."""
  parts = urllib.parse.urlsplit(url)
  if parts.scheme != "http" or parts.username or parts.password:
    return False
  if not trust_env:
    return True
  proxies = urllib.request.getproxies()
  return not ((proxies.get("http") or proxies.get("all"))
              and not urllib.request.proxy_bypass(parts.hostname or ""))


class ChatPoster:
  """Posts chat-completions bodies to one endpoint; thread-safe (a plain
  HTTP endpoint on each thread's kept connection, any other on one
  `httpx2.Client`, whose connection pool the threads share). `progress`
  shows the server's work (models/server_progress.py): on the kept
  connections a request waits past its timeout while that work moves."""

  def __init__(self, base_url: str, api_key: str, *, timeout: float,
               max_retries: int, trust_env: bool,
               progress: Callable[[], Hashable | None] | None = None):
    self.url = base_url.rstrip("/") + "/chat/completions"
    self.max_retries = max(0, max_retries)
    self._headers = {"Authorization": f"Bearer {api_key}",
                     "Content-Type": "application/json",
                     "Accept": "application/json"}
    self._kept = (plain_http.KeptConnections(self.url, timeout, progress)
                  if _plain(self.url, trust_env) else None)
    self._last = threading.local()
    self._http = httpx2.Client(
        timeout=httpx2.Timeout(timeout), trust_env=trust_env,
        limits=httpx2.Limits(max_connections=1000,
                             max_keepalive_connections=100))

  def _send(self, content: bytes, headers: Mapping[str, str]
            ) -> httpx2.Response | tuple[int, bytes]:
    """One request: (status, body) when it succeeded, else the response
    (an HTTP error); raises httpx2's exceptions."""
    if self._kept is None:
      response = self._http.post(self.url, content=content, headers=headers)
      return ((response.status_code, response.content)
              if response.status_code < 400 else response)
    try:
      status, said, data = self._kept.post(content, headers)
    except TimeoutError as e:
      raise httpx2.TimeoutException(str(e), request=self._request()) from e
    except (OSError, http.client.HTTPException) as e:
      raise httpx2.TransportError(str(e) or type(e).__name__,
                                  request=self._request()) from e
    if status < 400:
      return status, data
    return httpx2.Response(status, headers=said, content=data,
                           request=self._request())

  def _request(self) -> httpx2.Request:
    """The request an error names (made only for an error: building one
    parses the URL and headers, CPU that every answer paid)."""
    return httpx2.Request("POST", self.url)

  def post(self, body: Mapping[str, Any],
           headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The endpoint's answer to `body` (with `headers` besides), parsed;
    raises the `openai` client's exceptions (APIConnectionError,
    APITimeoutError, APIStatusError and its kinds) after the retries, and
    ValueError for a 200 whose body is not a JSON object."""
    content = json.dumps(body).encode()
    sent = {**self._headers, **headers} if headers else self._headers
    retry = 0
    while True:
      said = None
      try:
        response = self._send(content, sent)
      except httpx2.TimeoutException as e:
        if retry >= self.max_retries:
          raise openai.APITimeoutError(request=e.request) from e
      except httpx2.HTTPError as e:  # Connection, protocol, decoding.
        if retry >= self.max_retries:
          raise openai.APIConnectionError(request=e.request) from e
      else:
        if isinstance(response, tuple):
          self._last.sends = retry + 1
          answer = json.loads(response[1])
          if not isinstance(answer, dict):
            raise ValueError("the body is not a JSON object")
          return answer
        if retry >= self.max_retries or not _worth_retrying(response):
          raise status_error(response)
        said = response.headers
      time.sleep(_pause(retry, said))
      retry += 1

  def last_sends(self) -> int:
    """How many times this thread's last answered request went out."""
    return getattr(self._last, "sends", 1)

  def close(self) -> None:
    self._http.close()
