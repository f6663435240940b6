"""Belief on the page: which target norms an agent holds, read by the norm
matcher (metrics/classifiers/matching.py) with the run's own sentence
embedder, as `crsec report` reads them.

The page cannot wait for a report: a run in progress has none, and a
finished run may never get one. So the view reads each agent's qualified
norms itself. The embedder is the one run.json names (none named: the
default MiniLM; a user's `module:function`, loaded as `--embedder` loads
it), or the one `crsec view --embedder` gives, which must have the
run's fingerprint. Loading it is the one call site here (`run_embedder`).
Without it (the core install, a user's module not found) the page falls
back to each target's exact wording and says why.

A slot's reading is kept once made (`RunBelief`, per slot: the snapshot it
read and its holders), so a page that follows a run reads only the slots
that landed since; the matcher keeps every wording's reading, so a norm
held for a hundred slots is embedded once.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from crsec_concordia import embedding
from crsec_concordia.embedding import identity as embedder_identity
from crsec_concordia.embedding import user as user_embedder
from crsec_concordia.errors import UserError
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.rundir import presence, reading
from crsec_concordia.view import norms


def run_embedder(info: Mapping[str, Any],
                 given: embedding.SentenceEmbedder | None = None
                 ) -> embedding.SentenceEmbedder:
  """The sentence embedder a run played with (run.json's `embedder`), or
  `given` when it is that embedder; a UserError naming the fix when it
  cannot be had."""
  began = embedder_identity.identity_of_run(info)
  if given is not None:
    found = given
  elif embedder_identity.is_measured_default(began):
    found = embedding.shared_embedder()
  elif ":" in began.name:
    found = user_embedder.load_embedder(began.name)
  else:
    raise UserError(f"the run played with the sentence embedder {began}, "
                    "which is no module:function: give it with --embedder")
  # Loads it now (the default's torch, seconds), and tells a wrong one.
  now = embedding.identity_for(found)
  if now.fingerprint != began.fingerprint:
    raise UserError(f"the run played with the sentence embedder {began}, "
                    f"not {now}: give the run's with --embedder")
  return found


@dataclasses.dataclass
class _Slot:
  """One slot's reading: the snapshot step it read (None: none yet), each
  agent's target bit mask, and the share of present agents per target."""
  snapshot: int | None
  masks: list[int]
  shares: list[float | None]


class RunBelief:
  """One run's matcher, and its slots' readings kept once made."""

  def __init__(self, matcher: NormMatcher, embedder_name: str):
    self.matcher = matcher
    self.embedder_name = embedder_name
    self._slots: dict[int, _Slot] = {}
    self._also: dict[str, set[str]] = {}
    self._agents: list[str] = []
    self._resumes = 0
    self._lock = threading.Lock()

  def readings(self, contents: Sequence[str]) -> dict[str, frozenset[str]]:
    """Each wording -> the ids of the targets the matcher reads it as."""
    contents = [c for c in dict.fromkeys(contents) if c]
    return dict(zip(contents, self.matcher.means_many(contents)))

  def _read(self, run: reading.Run, snap: int | None,
            agents: Sequence[str], here: Sequence[str],
            also: Mapping[str, set[str]]) -> _Slot:
    ids = [t.id for t in self.matcher.targets]
    if snap is None:  # Nothing measured yet: no belief, as the report says.
      return _Slot(None, [0] * len(agents), [None] * len(ids))
    snapshot = run.snapshots[snap]
    held = {a: [n["content"] for n in reading.qualified(snapshot.get(a))]
            for a in agents}
    means = self.readings([c for cs in held.values() for c in cs])
    masks = []
    for agent in agents:
      mask = 0
      for content in held[agent]:
        meant = means.get(content, frozenset()) | also.get(
            norms.fold(content), set())
        for k, tid in enumerate(ids):
          if tid in meant:
            mask |= 1 << k
      masks.append(mask)
    there = set(here)
    present = [m for a, m in zip(agents, masks) if a in there]
    shares = [sum(1 for m in present if m & (1 << k)) / len(present)
              if present else None for k in range(len(ids))]
    return _Slot(snap, masks, shares)

  def slots(self, run: reading.Run, steps: Sequence[int],
            agents: Sequence[str], also: Mapping[str, set[str]]
            ) -> list[_Slot]:
    """Per step: its reading, made only for a step not read yet or whose
    latest snapshot changed (a slot whose records landed before its
    snapshot is read again once the snapshot is there). `also`: wordings
    (folded) known to mean targets besides the matcher's reading (each
    target's own, the report's); the kept readings are made again when
    they change (a report written meanwhile), and after a resume."""
    present = presence.present_at(run, steps)
    snaps = sorted(run.snapshots)
    # A resume replays slots after its checkpoint, whose snapshots may
    # differ (another model's answers): it forgets what was read.
    resumes = len(run.run.get("resumed") or ())
    out = []
    with self._lock:
      if (also != self._also or list(agents) != self._agents
          or resumes != self._resumes):
        self._slots.clear()
        self._also = {k: set(v) for k, v in also.items()}
        self._agents = list(agents)
        self._resumes = resumes
      for step, here in zip(steps, present):
        snap = max((s for s in snaps if s <= step), default=None)
        kept = self._slots.get(step)
        if kept is None or kept.snapshot != snap:
          kept = self._slots[step] = self._read(run, snap, agents, here, also)
        out.append(kept)
      for gone in set(self._slots) - set(steps):  # A run cut back on resume.
        del self._slots[gone]
    return out


@dataclasses.dataclass(frozen=True)
class Found:
  """A run's belief reader (None: none), the page's note on it, and
  whether the run's embedder is still loading."""
  reader: RunBelief | None
  note: str
  loading: bool = False


class Beliefs:
  """The runs' matchers for a page: each run's embedder loaded once per
  identity, now (`wait`) or on a thread of its own (a page being served
  shows the run at once and its belief when the embedder is ready).

  `changed` is called when an embedder has finished loading, so that a
  served page's data is made again.
  """

  def __init__(self, given: embedding.SentenceEmbedder | None = None,
               wait: bool = True,
               changed: Callable[[], None] | None = None):
    self._given = given
    self._wait = wait
    self._changed = changed
    self._lock = threading.Lock()
    # Embedder identity -> the embedder, or the reason there is none, or
    # None while it loads.
    self._embedders: dict[str, Any] = {}
    self._runs: dict[str, RunBelief] = {}

  def _load(self, key: str, info: Mapping[str, Any]) -> None:
    try:
      found: Any = run_embedder(info, self._given)
    except UserError as e:
      found = str(e)
    except Exception as e:  # pylint: disable=broad-except
      # A user's embedder that fails on the fingerprint's sentences: the
      # page says so rather than waiting for it.
      found = f"the run's embedder failed ({type(e).__name__}: {e})"
    with self._lock:
      self._embedders[key] = found
    if self._changed is not None and not self._wait:
      self._changed()

  def embedder(self, info: Mapping[str, Any]) -> tuple[Any, str | None]:
    """(the run's embedder or None, why there is none: None while it
    loads)."""
    key = str(embedder_identity.identity_of_run(info))
    with self._lock:
      started = key in self._embedders
      if not started:
        self._embedders[key] = None
    if not started:
      if self._wait:
        self._load(key, info)
      else:
        threading.Thread(target=self._load, args=(key, dict(info)),
                         daemon=True, name="crsec-view-embedder").start()
    with self._lock:
      found = self._embedders[key]
    if found is None or isinstance(found, str):
      return None, found
    return found, None

  def for_run(self, run: reading.Run) -> Found:
    """The run's belief reader, or None and a note saying why."""
    if not run.targets:
      return Found(None, "The scenario names no target norms: nobody is "
                   "coloured.")
    found, why = self.embedder(run.run)
    if found is None:
      return Found(None, (
          "Loading the run's sentence embedder: target colours go by each "
          "target's exact wording until it is ready." if why is None else
          f"No norm matcher ({why}): target colours go by each target's "
          "exact wording only."), loading=why is None)
    key = str(run.path)
    with self._lock:
      kept = self._runs.get(key)
      if kept is None:
        kept = self._runs[key] = RunBelief(
            NormMatcher(run.targets, behaviours=run.behaviours,
                        embedder=found),
            embedder_identity.name_of(found))
    return Found(kept, (
        "Target colours and belief: the norm matcher's reading of each "
        "agent's qualified norms with the run's sentence embedder "
        f"({kept.embedder_name}), as `crsec report` reads them (without "
        "its --llm-judge)."))

