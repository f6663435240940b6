"""The similarity thresholds of an embedder, resolved once per identity.

Every cosine that decides a judgement (records.py's
SimilarityThresholds) holds for the embedder it was measured with, so the
Embedder value (value.py) asks here once, when it is built, and every
consumer (the ConflictDetector, the observers' perception, the referee,
ImmediateEvaluation, the matcher) reads the record from the value it was
given. MiniLM's record ships; another embedder's is found
by its name and fingerprint (identity.py) among the person's
calibrations (`crsec calibrate --embedder`). An embedder nobody measured
gets the record with every gate open, and the process says so once, in
its log (run.log in a run), since with it nothing is dropped but more
calls are made.
"""

from __future__ import annotations

import logging
import threading

from crsec_concordia.embedding import identity as embedder_identity
from crsec_concordia.embedding import records

_log = logging.getLogger(__name__)

# MiniLM's record, shipped (the thresholds every run on the default reads).
MINILM_THRESHOLDS = records.load_similarity(
    embedder_identity.MINILM_NAME, dirs=[records.SHIPPED_THRESHOLDS])
UNMEASURED_NOTE = ("no similarity thresholds measured for the embedder "
                   "{name} (fingerprint {fingerprint}): every gate lets its "
                   "judgement through (more model calls, nothing dropped) "
                   "and the matcher asks its judge where one is given; "
                   "measure them with "
                   "`crsec calibrate --thresholds --embedder module:function`")

_lock = threading.Lock()
_found: dict[embedder_identity.EmbedderIdentity,
             records.SimilarityThresholds] = {}
_told: set[embedder_identity.EmbedderIdentity] = set()


def record_for(identity: embedder_identity.EmbedderIdentity | None
               ) -> records.SimilarityThresholds:
  """The record measured for `identity` (None: MiniLM), else the open one."""
  if embedder_identity.is_measured_default(identity):
    return MINILM_THRESHOLDS
  with _lock:
    found = _found.get(identity)
  if found is None:
    found = records.load_similarity(identity.name, identity.fingerprint)
    if found is None:  # Looked for again next time: it may be saved since.
      return records.SimilarityThresholds.unmeasured(identity.name,
                                                      identity.fingerprint)
    with _lock:
      _found[identity] = found
  return found


def tell(record: records.SimilarityThresholds) -> bool:
  """Logs the unmeasured embedder's warning, once per process and
  embedder; True the first time."""
  key = embedder_identity.EmbedderIdentity(record.embedder,
                                           record.fingerprint)
  with _lock:
    first = key not in _told
    _told.add(key)
  if first:
    _log.warning(UNMEASURED_NOTE.format(name=record.embedder,
                                        fingerprint=record.fingerprint))
  return first


_entered: set[embedder_identity.EmbedderIdentity] = set()


def first_entry(record: records.SimilarityThresholds) -> bool:
  """True once per process for an unmeasured record: the component that
  asks first writes the entry of Concordia's log saying so."""
  if record.measured:
    return False
  key = embedder_identity.EmbedderIdentity(record.embedder,
                                           record.fingerprint)
  with _lock:
    first = key not in _entered
    _entered.add(key)
  return first
