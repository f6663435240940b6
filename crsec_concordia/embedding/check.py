"""The check every batch of an embedder's vectors passes before it is used.

A vector with NaN in it makes every cosine NaN, and NaN compares false
with every floor: a gate then drops what it should judge, in silence. An
all-zero vector has no direction, so its cosines are zero whatever the
text. Vectors of different lengths, or a string, end in numpy's error far
from the embedder that caused them. So each batch is checked where it
leaves the embedder: one vector per text, all of the length the first
vectors had, finite, and of non-zero norm. What failed is said in one line
that names the embedder, the way a bad flag is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import NoReturn

import numpy as np

from crsec_concordia.errors import UserError

BAD_VECTORS_FIX = "fix the function, or pass another --embedder"
_SHOWN = 40  # Characters of the text a bad vector was given for.


class BadVectors(UserError):
  """An embedder's vectors cannot be used (or the embedder raised).

  A UserError: the first vectors failing stop a command with one line and
  exit code 2 before anything is written; a later batch failing stops the
  run it came in, resumable (runs/session.py)."""


def _shown(text: str) -> str:
  flat = " ".join(str(text).split())
  return repr(flat if len(flat) <= _SHOWN else flat[:_SHOWN - 3] + "...")


class VectorCheck:
  """Checks an embedder's vectors, batch after batch, against its first.

  Thread-safe: Concordia's components embed from parallel threads, and the
  first batch that gets here sets the length the others must have.
  """

  def __init__(self, name: str):
    self.name = name
    self._lock = threading.Lock()
    self._length: int | None = None

  @property
  def length(self) -> int | None:
    """The length of the first vectors checked (None before them)."""
    return self._length

  def _bad(self, what: str) -> BadVectors:
    return BadVectors(f"the embedder {self.name} {what}: {BAD_VECTORS_FIX}")

  def _vector(self, raw: object, text: str) -> np.ndarray:
    """One returned vector as floats, or BadVectors saying why not."""
    if isinstance(raw, (str, bytes)):
      self._fail(f"returned a {type(raw).__name__}, not a vector of "
                 f"numbers, for {_shown(text)}")
    try:
      vector = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError):
      raise self._bad(f"returned {type(raw).__name__} for {_shown(text)}, "
                      "not a vector of numbers (vectors of different "
                      "lengths?)") from None
    return vector

  def _fail(self, what: str) -> NoReturn:
    raise self._bad(what)

  def rows(self, texts: Sequence[str], raw: object) -> np.ndarray:
    """A batch returned for `texts` (one vector per text), checked."""
    if isinstance(raw, (str, bytes)) or raw is None:
      self._fail(f"returned {type(raw).__name__}, not vectors of numbers, "
                 f"for {len(texts)} texts")
    try:
      rows = [self._vector(r, t) for r, t in zip(raw, texts, strict=True)]
    except ValueError:  # zip: not one vector per text.
      raise self._bad(f"returned {len(list(raw))} vectors for {len(texts)} "
                      "texts") from None
    except TypeError:
      raise self._bad(f"returned {type(raw).__name__}, not one vector per "
                      "text") from None
    return self._checked(texts, rows)

  def one(self, text: str, raw: object) -> np.ndarray:
    """One vector returned for `text`, checked (its shape kept)."""
    vector = self._vector(raw, text)
    self._checked([text], [vector.ravel()])
    return vector

  def _checked(self, texts: Sequence[str], rows: list[np.ndarray]
               ) -> np.ndarray:
    flat = [r.ravel() for r in rows]
    for text, row, given in zip(texts, flat, rows):
      if given.ndim > 1 and given.size != max(given.shape):
        self._fail(f"returned an array of shape {given.shape} for "
                   f"{_shown(text)}, not one vector")
      if row.size == 0:
        self._fail(f"returned an empty vector for {_shown(text)}")
      with self._lock:
        if self._length is None:
          self._length = row.size
        length = self._length
      if row.size != length:
        self._fail(f"returned a vector of length {row.size} for "
                   f"{_shown(text)} after vectors of length {length}")
    if not flat:
      return np.zeros((0, self._length or 0), dtype=np.float32)
    matrix = np.stack(flat)
    for bad, what in ((~np.isfinite(matrix).all(axis=1),
                       "a vector with NaN or infinite values"),
                      (~matrix.any(axis=1), "an all-zero vector")):
      if bad.any():
        self._fail(f"returned {what} for {_shown(texts[int(bad.argmax())])}")
    return matrix

  def calling(self, fn: Callable[[], object], texts: Sequence[str]
              ) -> object:
    """`fn()`, with an exception it raises said as the embedder's."""
    try:
      return fn()
    except UserError:  # Already one line (a missing extra, bad vectors).
      raise
    except Exception as e:  # pylint: disable=broad-except
      shown = " ".join(str(e).split())[:120]
      raise self._bad(f"raised {type(e).__name__} ({shown}) embedding "
                      f"{_shown(texts[0]) if texts else 'no text'}"
                      ) from None
