"""What each agent perceives of a slot: the deeds in view, at most so many.

An agent perceives the deeds done where it is and in the places its place
sees or hears into (game_masters/places.py); an agent who moved is seen
both where it went and where it left. So that no observation grows with
the population, one holds at most `max_events` deeds: the agent's own,
then the deeds nearest the norms it holds (by the simulation's sentence
embedder, as its ConflictDetector finds the norm a deed is about, with
the same floor), then the rest in name order; the deeds kept are told in
name order, as every observation is, and those left out are counted.
Under a scenario's `network: {attend: tied_first}` the deeds of the
observer's neighbours come before the others, each part in that order.
Everything is decided from the slot's deeds and the observers' norms, with
ties broken by name, so thread order never matters; similarities are
computed only for an observer with more deeds in view than it can hold,
and once per place and set of norms.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from crsec_concordia import embedding
from crsec_concordia.operations import detect_conflict_relevance as relevance
from crsec_concordia.embedding import SentenceEmbedder
from crsec_concordia.game_masters.places import PlaceMap

DEFAULT_MAX_EVENTS = 12
# The held norms of an observer, by name (empty: it holds none, or is no
# normative agent).
NormsOf = Callable[[str], Sequence[str]]


@dataclasses.dataclass(frozen=True, eq=False)
class Deed:
  """One action of the slot as observers receive it (each is itself:
  compared and hashed by identity, which a thousand observers do often)."""
  actor: str
  place: str
  text: str      # The event line (observations.format_action).
  words: str     # What the actor did, as observers read it.
  moved_from: str | None = None

  def in_view_of(self, view: frozenset[str]) -> bool:
    return self.place in view or (self.moved_from is not None
                                  and self.moved_from in view)


@dataclasses.dataclass
class Perceived:
  """The slot's deeds each observer perceives, and how many it missed."""
  texts: dict[str, list[str]]
  unseen: dict[str, int]


class LocalPerception:
  """Composes every observer's share of a slot's deeds."""

  def __init__(self, places: PlaceMap, *,
               max_events: int = DEFAULT_MAX_EVENTS,
               norms_of: NormsOf | None = None,
               embedder: SentenceEmbedder | None = None,
               floor: float | None = None,
               ties: Mapping[str, frozenset[str]] | None = None):
    """Creates it.

    Args:
      places: the scenario's places.
      max_events: the most deeds one observation holds (at least 1).
      norms_of: the norms an observer holds (none: deeds by name alone).
      embedder: the simulation's sentence embedder (none: by name alone).
      floor: the similarity to a held norm from which a deed counts as
        near it (None: the ConflictDetector's relevance floor measured
        for the embedder, embedder_thresholds.py).
      ties: each observer's neighbours, whose deeds it perceives first
        (None: no one's first).
    """
    if max_events < 1:
      raise ValueError("an observation holds at least one deed")
    self._places = places
    self._max = max_events
    self._norms_of = norms_of
    self._embedder = None if embedder is None else embedding.cached(embedder)
    self._floor = (embedding.thresholds_of(embedder).relevance
                   if floor is None else floor)
    self._ties = ties

  def compose(self, deeds: Sequence[Deed], where: Mapping[str, str],
              observers: Sequence[str]) -> Perceived:
    """Each observer's deeds (in the order of `deeds`) and unseen counts
    (only where some were left out)."""
    texts: dict[str, list[str]] = {}
    unseen: dict[str, int] = {}
    order = {d: i for i, d in enumerate(deeds)}
    own = {d.actor: d for d in deeds}
    # The deeds by the places they are seen at: a view's deeds are gathered
    # from its few places, not sought among a town's every deed.
    at: dict[str, list[Deed]] = {}
    for d in deeds:
      for place in dict.fromkeys((d.place, d.moved_from)):
        if place is not None:
          at.setdefault(place, []).append(d)
    in_view: dict[frozenset[str], list[Deed]] = {}
    slot = _Scores(deeds, self._embedder)
    ranked: dict[tuple, list[Deed]] = {}
    for observer in observers:
      view = self._places.perceived_from(where.get(observer, ""))
      if view not in in_view:
        found = {d for p in view for d in at.get(p, ())}
        in_view[view] = sorted(found, key=order.__getitem__)
      seen = in_view[view]
      mine = own.get(observer)
      if mine is not None and not mine.in_view_of(view):
        seen = sorted([*seen, mine], key=order.__getitem__)
      if len(seen) > self._max:
        norms = tuple(self._norms_of(observer)) if self._norms_of else ()
        if (view, norms) not in ranked:
          ranked[view, norms] = self._rank(in_view[view], norms, slot)
        first = [mine] if mine is not None else []
        ordered = self._tied_first(observer, ranked[view, norms])
        kept = first + list(itertools.islice(
            (d for d in ordered if d is not mine), self._max - len(first)))
        unseen[observer] = len(seen) - len(kept)
        seen = sorted(kept, key=order.__getitem__)
      texts[observer] = [d.text for d in seen]
    return Perceived(texts=texts, unseen=unseen)

  def _tied_first(self, observer: str, ranked: list[Deed]) -> list[Deed]:
    """`ranked` with the observer's neighbours' deeds first (a stable
    split: each part keeps its order)."""
    if self._ties is None:
      return ranked
    tied = self._ties.get(observer, frozenset())
    return ([d for d in ranked if d.actor in tied]
            + [d for d in ranked if d.actor not in tied])

  def _rank(self, deeds: list[Deed], norms: tuple[str, ...],
            slot: "_Scores") -> list[Deed]:
    """The deeds nearest the norms first (by similarity, then name), then
    the rest by name."""
    if not norms or self._embedder is None or not deeds:
      return sorted(deeds, key=lambda d: d.actor)
    nearest = slot.nearest(deeds, norms)
    def key(deed: Deed) -> tuple:
      score = nearest[deed]
      if score >= self._floor:
        return (0, -round(score, 6), deed.actor)
      return (1, 0.0, deed.actor)
    return sorted(deeds, key=key)


class _Scores:
  """Each deed's similarity to each norm held by anyone, computed once per
  slot for the norms asked about: a deed's best sentence against the norm
  (operations/detect_conflict_relevance.py: the whole text counts as a
  sentence)."""

  def __init__(self, deeds: Sequence[Deed], embedder):
    self._deeds = list(deeds)
    self._index = {d: i for i, d in enumerate(self._deeds)}
    self._embedder = embedder
    self._pieces: list[list[str]] | None = None
    self._by_norm: dict[str, np.ndarray] = {}

  def nearest(self, deeds: Sequence[Deed], norms: Sequence[str]
              ) -> dict[Deed, float]:
    """Each deed's similarity to the norm of `norms` it is nearest."""
    missing = [n for n in dict.fromkeys(norms) if n not in self._by_norm]
    if missing:
      self._score(missing)
    best = np.max(np.stack([self._by_norm[n] for n in norms]), axis=0)
    return {d: float(best[self._index[d]]) for d in deeds}

  def _score(self, norms: list[str]) -> None:
    if self._pieces is None:
      self._pieces = [relevance.pieces(d.words) for d in self._deeds]
    flat = [p for ps in self._pieces for p in ps]
    scores = np.asarray(embedding.similarity(self._embedder, flat, norms),
                        dtype=float)
    row = 0
    per_deed = []
    for ps in self._pieces:
      per_deed.append(scores[row:row + len(ps)].max(axis=0))
      row += len(ps)
    table = np.stack(per_deed) if per_deed else np.zeros((0, len(norms)))
    for j, norm in enumerate(norms):
      self._by_norm[norm] = table[:, j]
