"""A failed request in one line that says what to fix, with no API key.

Kept apart from the client (openai_compatible.py): which failure means
which fix (a key, a model name, a schema mode, a timeout) is its own
concern, and every command shows these lines to the user as they are.
"""

from __future__ import annotations

import openai

from crsec_concordia.models import base


def one_line(text: object, limit: int = 200) -> str:
  """Server or socket error text, flattened: an EndpointError is one line."""
  flat = " ".join(str(text).split())
  return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def is_outage(error: Exception) -> bool:
  """Whether a failed request (after the client's retries) says the
  endpoint is down rather than that this request is wrong: it could not be
  reached or did not answer in time, answered 5xx, or still answered 429
  (models/outage.py). A 4xx other than 429 is the request's fault."""
  if isinstance(error, openai.APIConnectionError):  # Timeouts too.
    return True
  if isinstance(error, openai.APIStatusError):
    return error.status_code == 429 or error.status_code >= 500
  return False


def describe_failure(error: Exception, *, shown_url: str, model_name: str,
                     base_url: str, api_key: str | None
                     ) -> base.EndpointError:
  """The failure in one line, without the API key: a server or proxy that
  echoes the key in its error body would otherwise put it on the terminal,
  in run.log and in the run's failure records."""
  text = base.redact_text(
      str(_explain(error, shown_url, model_name)), base_url)
  # Shorter keys ("none", "local") are no secret.
  if api_key and len(api_key) >= 8:
    text = text.replace(api_key, "[API key]")
  return base.EndpointError(text)


# Failures whose line needs nothing of the error but its kind, checked in
# this order (a timeout is also a connection error, checked after these).
_PLAIN = (
    (openai.AuthenticationError,
     "rejected the API key (HTTP 401): set CRSEC_API_KEY or --api-key to a "
     "valid key."),
    (openai.NotFoundError,
     "answered 404: check --model/CRSEC_MODEL and that the base URL ends in "
     "/v1."),
    (openai.APITimeoutError,
     "did not answer in time after retries: check the server load, raise "
     "--timeout, or unset CRSEC_BASE_URL to use the embedded model."),
    (openai.PermissionDeniedError,
     "refused access (HTTP 403): check that CRSEC_API_KEY or --api-key may "
     "use this model."),
)


def _explain(error: Exception, shown_url: str,
             model_name: str) -> base.EndpointError:
  where = f"{shown_url} (model {model_name!r})"
  for kind, what in _PLAIN:
    if isinstance(error, kind):
      return base.EndpointError(f"{where} {what}")
  if isinstance(error, openai.APIConnectionError):
    cause = one_line(error.__cause__ or error)
    return base.EndpointError(
        f"cannot reach {where}: {cause}; start the server or fix "
        "--base-url/CRSEC_BASE_URL, or unset it to use the embedded model.")
  if isinstance(error, openai.APIStatusError):
    body = one_line(error.message)
    if error.status_code in (400, 422):
      fix = ("if it rejects structured output, try CRSEC_SCHEMA_MODE="
             "json_object or grammar")
    else:
      fix = ("check the server's log, or unset CRSEC_BASE_URL to use the "
             "embedded model")
    return base.EndpointError(
        f"{where} answered HTTP {error.status_code}: {body}; {fix}.")
  return base.EndpointError(f"{where}: {one_line(error)}")
