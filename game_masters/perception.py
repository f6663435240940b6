"""What each agent perceives of a slot: the deeds in view, at most so many.

An agent perceives the deeds done where it is and in the places its place
sees or hears into (game_masters/places.py); an agent who moved is seen
both where it went and where it left. So that no observation grows with
the population, one holds at most `max_events` deeds: the agent's own,
then the deeds nearest the norms it holds (by the simulation's sentence
embedder, as its ConflictDetector finds the norm a deed is about, with
the same floor), then the rest in name order; the deeds kept are told in
name order, as every observation is, and those left out are counted.
Everything is decided from the slot's deeds and the observers' norms, with
ties broken by name, so thread order never matters; similarities are
computed only for an observer with more deeds in view than it can hold,
and once per place and set of norms.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from crsec_concordia import embedding, relevance
from crsec_concordia.components.conflict_detector import DEFAULT_RELEVANCE
from crsec_concordia.embedding import SentenceEmbedder
from crsec_concordia.game_masters.places import PlaceMap

DEFAULT_MAX_EVENTS = 12
# The held norms of an observer, by name (empty: it holds none, or is no
# normative agent).
NormsOf = Callable[[str], Sequence[str]]


@dataclasses.dataclass(frozen=True)
class Deed:
  """One action of the slot as observers receive it."""
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
               floor: float = DEFAULT_RELEVANCE):
    """Creates it.

    Args:
      places: the scenario's places.
      max_events: the most deeds one observation holds (at least 1).
      norms_of: the norms an observer holds (none: deeds by name alone).
      embedder: the simulation's sentence embedder (none: by name alone).
      floor: the similarity to a held norm from which a deed counts as
        near it (the ConflictDetector's relevance floor).
    """
    if max_events < 1:
      raise ValueError("an observation holds at least one deed")
    self._places = places
    self._max = max_events
    self._norms_of = norms_of
    self._embedder = None if embedder is None else embedding.cached(embedder)
    self._floor = floor

  def compose(self, deeds: Sequence[Deed], where: Mapping[str, str],
              observers: Sequence[str]) -> Perceived:
    """Each observer's deeds (in the order of `deeds`) and unseen counts
    (only where some were left out)."""
    texts: dict[str, list[str]] = {}
    unseen: dict[str, int] = {}
    ranked: dict[tuple, list[Deed]] = {}
    for observer in observers:
      view = self._places.perceived_from(where.get(observer, ""))
      seen = [d for d in deeds if d.in_view_of(view) or d.actor == observer]
      if len(seen) > self._max:
        kept = self._keep(observer, seen, view, ranked)
        unseen[observer] = len(seen) - len(kept)
        seen = [d for d in seen if d in kept]
      texts[observer] = [d.text for d in seen]
    return Perceived(texts=texts, unseen=unseen)

  def _keep(self, observer: str, seen: list[Deed], view: frozenset[str],
            ranked: dict[tuple, list[Deed]]) -> set[Deed]:
    """The deeds an observer with too many in view keeps: its own first,
    then the others by `_rank` (shared by observers with the same view and
    the same norms)."""
    norms = tuple(self._norms_of(observer)) if self._norms_of else ()
    key = (view, norms)
    if key not in ranked:
      ranked[key] = self._rank([d for d in seen if d.in_view_of(view)], norms)
    own = [d for d in seen if d.actor == observer]
    others = [d for d in ranked[key] if d.actor != observer]
    return set((own + others)[:self._max])

  def _rank(self, deeds: list[Deed], norms: tuple[str, ...]) -> list[Deed]:
    """The deeds nearest the norms first (by similarity, then name), then
    the rest by name."""
    if not norms or self._embedder is None or not deeds:
      return sorted(deeds, key=lambda d: d.actor)
    nearest = relevance.nearest_rules(self._embedder,
                                      [d.words for d in deeds], list(norms))
    def order(pair: tuple[Deed, relevance.Nearest | None]) -> tuple:
      deed, near = pair
      if near is not None and near.similarity >= self._floor:
        return (0, -round(near.similarity, 6), deed.actor)
      return (1, 0.0, deed.actor)
    return [d for d, _ in sorted(zip(deeds, nearest), key=order)]
