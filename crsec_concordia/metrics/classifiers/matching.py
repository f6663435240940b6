"""Deciding that a personal norm MEANS a target norm (semantic matching).

Agents word the same norm in many ways, often as long policy sentences,
compounds, hedged or conditional norms, so string equality would miss most
adoptions and one cosine to one four-word sentence misses many. The rule
(CHOSEN_RULE, a MatchRule; chosen on the calibration half of
data/norm_labels.jsonl by matcher_quality.py, docs/metrics.md):

  The norm is read in *units*: the whole text and each of its clauses, each
  without the part it turns away from ("rather than ...") and also without
  the reason it gives ("so that ..."); a unit that permits or dismisses
  ("is fine", "optional", "no need to") is left out. A unit's score for a
  target is the mean of its three best cosines (all-MiniLM-L6-v2, the
  embedder the threshold was set with) with the target's text and the
  scenario's `aliases` for it, each less 0.05 where one of the two refuses
  something and the other does not; a unit counts only for the target it
  is nearest to. The norm MEANS a target when one unit's score reaches the
  rule's threshold (0.525). A compound norm may mean several targets.

What counts as a match (the labels' standard): holding the norm commits the
holder to the target's standard of behaviour: same behaviour, same or wider
scope; its type (descriptive or injunctive) does not matter. Narrower
conditions, other behaviours, permissions, opposites, and scopes that leave
the target's case open do not count. Embeddings cannot see most of that
(a narrowed norm scores like a paraphrase): the measured error per target
is in data/matcher_quality.json, shown beside the belief curves; the
optional LLM judge (judge.py) applies the rule in words.

With a judge, every pair whose score is at or above JUDGE_FLOOR (0.40) is
put to the judge and its yes/no decides; a judge failure falls back to the
rule's decision and is counted.

A looser relation, ABOUT, tells whether a conflict, conversation or thought
concerns a target at all: cosine >= RELATED_THRESHOLD (0.40) with the
target's text or the description of one of its behaviours. It feeds counts,
never belief.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from crsec_concordia import embedding
from crsec_concordia.embedding import identity as embedder_identity
from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.metrics.classifiers import measured, norm_clauses
from crsec_concordia.scenarios import TargetNorm

# The default embedder's measured thresholds (calibration/thresholds.py).
# MATCH_THRESHOLD, the single cosine's (threshold_search.py), is the cut of
# emergent norms' clusters, where two norms of agents are compared, not a
# norm and a target.
MEASURED = MINILM_THRESHOLDS.matcher
MATCH_THRESHOLD = MEASURED.match
JUDGE_FLOOR = MEASURED.judge_floor
RELATED_THRESHOLD = MEASURED.related
# The polarity penalty measured with MiniLM (embedder_thresholds.py).
POLARITY = MINILM_THRESHOLDS.polarity

class Judge(Protocol):
  """MEANS in words for a (norm, target text) pair: True, False, or None
  when no valid answer came (judge.py's LLMJudge); `failures` counts those."""
  failures: int

  def __call__(self, norm: str, target: str) -> bool | None:
    ...


@dataclasses.dataclass(frozen=True)
class MatchRule:
  """One way of deciding MEANS from cosine similarities.

  A text's *units* are the text itself and, with `clauses`, each of its
  clauses (norm_clauses.clauses), with `contrast` stripped of the part the
  norm turns away from. A target's *references* are its text and, with
  `aliases`, its scenario aliases. A unit's score for a target is its best
  cosine with one of the target's references; with `permissions`, a unit
  that permits or dismisses scores nothing; with `margin`, a unit scores
  for a target only when no other target of the scenario is closer to it
  by more than `margin`; with `opposites`, a unit without a word of refusal
  (norm_clauses.has_negation) that is closer to the target's violating
  behaviours than to its complying ones (the scenario's descriptions)
  endorses the violation and scores nothing for that target; with
  `stance`, a unit scores nothing against a reference that speaks of the
  same deed with the opposite stance (their wordings without plain
  negators, norm_clauses.without_negation, at least `stance` alike, and
  only one of the two had a negator: "People should not tip." against
  "Tip after meals."). The text MEANS the target when its best unit's
  score reaches the target's threshold (`thresholds` by the target's text,
  else
  `threshold`).
  """
  name: str
  threshold: float = MATCH_THRESHOLD
  aliases: bool = False
  clauses: bool = False
  commas: bool = False
  contrast: bool = False
  permissions: bool = False
  margin: float | None = None
  opposites: bool = False
  reasons: bool = False
  polarity: float = 0.0
  pool: int = 1
  stance: float | None = None
  thresholds: tuple[tuple[str, float], ...] = ()

  def threshold_for(self, target_text: str) -> float:
    """Thresholds are set for a target's wording: a target of another
    wording (another venue's) gets the one threshold calibrated for all."""
    return dict(self.thresholds).get(target_text, self.threshold)

  def units(self, text: str) -> list[str]:
    """The parts of `text` that are scored, permissions left out."""
    parts = [text]
    if self.clauses:
      # Tidied like its clauses, so that a one-clause norm is embedded once.
      parts = [norm_clauses.tidy(text) or text,
               *norm_clauses.clauses(text, commas=self.commas)]
    if self.contrast:
      parts = [norm_clauses.without_contrast(p) for p in parts]
    if self.reasons:
      parts += [norm_clauses.without_reason(p) for p in parts]
    if self.permissions:
      parts = [p for p in parts if not norm_clauses.is_permission(p)]
    return list(dict.fromkeys(parts))

  def describe(self) -> dict[str, Any]:
    return dataclasses.asdict(self) | {"thresholds": dict(self.thresholds)}


# One cosine with the target's text (bench/matcher_quality.py compares it).
SINGLE_COSINE = MatchRule("single_cosine")
# The rule chosen on the calibration half of data/norm_labels.jsonl
# (matcher_quality.select; docs/trials/matcher.md): one threshold for every
# target, so a venue the labels do not cover is read as the shipped ones are.
CHOSEN_RULE = MatchRule(
    "nearest_target_polarity_pool3", threshold=MEASURED.rule, aliases=True,
    clauses=True, contrast=True, permissions=True, reasons=True, margin=0.0,
    polarity=POLARITY, pool=3)


class NormMatcher:
  """MEANS and ABOUT relations between texts and a scenario's target norms."""

  def __init__(self, targets: Sequence[TargetNorm], *,
               behaviours: Mapping[str, str] | None = None,
               rule: MatchRule = CHOSEN_RULE,
               related_threshold: float | None = None,
               embedder: embedding.SentenceEmbedder | None = None,
               judge: Judge | None = None,
               judge_floor: float | None = None):
    """`behaviours`: the scenario's behaviour descriptions by id (a run's
    `Run.behaviours`); what a text ABOUT a target may speak of, and what
    tells its compliance from its violation. A behaviour without one is
    read as its id in words. The thresholds not given are the embedder's
    measured ones (the Embedder value's); with an embedder nobody
    measured, a judge is asked of every pair."""
    floors = embedding.thresholds_of(embedder)
    if embedder is None:
      embedder = embedding.shared_embedder()
    if rule is CHOSEN_RULE and floors.measured:
      rule = dataclasses.replace(rule, threshold=floors.matcher.rule,
                                 polarity=floors.polarity)
    self.measured = floors.measured
    matcher = floors.matcher if floors.measured else MEASURED
    if related_threshold is None:
      related_threshold = matcher.related
    if judge_floor is None:
      judge_floor = matcher.judge_floor if floors.measured else (
          floors.matcher.judge_floor)
    self.targets = list(targets)
    described = behaviours or {}
    # Per target: the descriptions of its complying, then its violating
    # behaviours.
    self._behaviour_texts = [
        tuple(described.get(b, b.replace("_", " "))
              for b in (*t.complies, *t.violates)) for t in self.targets]
    self.rule = rule
    # The cosine at which two norms say the same (emergent norms' clusters).
    self.threshold = matcher.match
    self.related_threshold = related_threshold
    self.judge = judge
    self.judge_floor = judge_floor
    # Pairs kept from the judge by its floor (gate_tally.py): said, not
    # silent.
    self.judge_skipped = 0
    self._embedder = embedder
    self._means: dict[str, frozenset[str]] = {}
    self._about: dict[str, frozenset[str]] = {}
    self._refs: list[str] = []
    self._ref_owner: list[int] = []
    for k, target in enumerate(self.targets):
      wordings = (target.text, *(target.aliases if rule.aliases else ()))
      for wording in dict.fromkeys(wordings):
        self._refs.append(wording)
        self._ref_owner.append(k)

  @property
  def embedder(self) -> embedding.SentenceEmbedder:
    """The text -> vector function the matcher compares with."""
    return self._embedder

  def describe(self) -> dict[str, Any]:
    """The rule, its thresholds and its recorded error where it holds; an
    embedder other than the default is named (`embedder`), with whether
    the recorded error holds for it (`calibrated`)."""
    figures = measured.figures_for(self._embedder)
    found = {"rule": self.rule.name,
            "threshold": self.rule.threshold,
            "settings": self.rule.describe(),
            "thresholds": {t.id: self.rule.threshold_for(t.text)
                           for t in self.targets},
            "aliases": {t.id: len(t.aliases) if self.rule.aliases else 0
                        for t in self.targets},
            "related_threshold": self.related_threshold,
            "judge": self.judge is not None,
            "judge_floor": self.judge_floor if self.judge else None,
            "judge_failures": self.judge.failures if self.judge else 0,
            **({"judge_skipped": self.judge_skipped} if self.judge else {}),
            # Precision and recall on the labelled test half, without the
            # judge, where this rule and the target's wording were measured.
            "measured_error": {
                t.id: measured.measured_error(t, self.rule.name, figures)
                for t in self.targets}}
    identity = embedding.identity_for(self._embedder)
    if not embedder_identity.is_measured_default(identity):
      found["embedder"] = {**identity.describe(), "calibrated": bool(figures),
                           "thresholds_measured": self.measured}
      if not self.measured:
        found["judge_floor"] = None  # Every pair put to the judge.
    return found

  def similarity(self, texts: Sequence[str]) -> np.ndarray:
    """Cosine of each text with each target's text, (len(texts), targets)."""
    return embedding.similarity(self._embedder, list(texts),
                                     [t.text for t in self.targets])

  def scores(self, texts: Sequence[str]) -> np.ndarray:
    """The rule's score of each text for each target, (len(texts), targets).

    -1 where every unit of the text was left out (a permission)."""
    out = np.full((len(texts), len(self.targets)), -1.0)
    if not texts or not self.targets:
      return out
    units = [self.rule.units(t) for t in texts]
    flat = list(dict.fromkeys(u for us in units for u in us))
    if not flat:
      return out
    sims = np.asarray(embedding.similarity(self._embedder, flat, self._refs))
    if self.rule.polarity:
      # A reference that refuses a behaviour ("do not leave tools out")
      # and a unit that does not ("people leave tools out") are far apart
      # in meaning however close their embeddings.
      unit_neg = np.array([norm_clauses.has_negation(u) for u in flat])
      ref_neg = np.array([norm_clauses.has_negation(r) for r in self._refs])
      sims = sims - self.rule.polarity * (unit_neg[:, None] != ref_neg[None, :])
    if self.rule.stance is not None:
      sims = np.where(self._opposite_stance(flat), -1.0, sims)
    owner = np.asarray(self._ref_owner)
    per_target = np.stack([self._pooled(sims[:, owner == k])
                           for k in range(len(self.targets))], axis=1)
    if self.rule.opposites:
      per_target = np.where(self._endorses_violation(flat), -1.0, per_target)
    if self.rule.margin is not None and len(self.targets) > 1:
      best = per_target.max(axis=1, keepdims=True)
      per_target = np.where(per_target >= best - self.rule.margin,
                            per_target, -1.0)
    row = {u: per_target[i] for i, u in enumerate(flat)}
    for i, us in enumerate(units):
      if us:
        out[i] = np.max([row[u] for u in us], axis=0)
    return out

  def _opposite_stance(self, units: list[str]) -> np.ndarray:
    """(units, references): the two speak of one deed, one of them for it
    and the other against it (see `stance`)."""
    unit_deeds, unit_neg = zip(*map(norm_clauses.without_negation, units))
    ref_deeds, ref_neg = zip(*map(norm_clauses.without_negation, self._refs))
    alike = np.asarray(embedding.similarity(self._embedder, list(unit_deeds),
                                                 list(ref_deeds)))
    flipped = np.array(unit_neg)[:, None] != np.array(ref_neg)[None, :]
    return flipped & (alike >= self.rule.stance)

  def _pooled(self, sims: np.ndarray) -> np.ndarray:
    """Each row's mean of its `pool` best references (1: the best one)."""
    k = min(self.rule.pool, sims.shape[1])
    return np.sort(sims, axis=1)[:, -k:].mean(axis=1)

  def _endorses_violation(self, units: list[str]) -> np.ndarray:
    """(units, targets): the unit names the target's violation unrefused."""
    out = np.zeros((len(units), len(self.targets)), dtype=bool)
    plain = np.array([not norm_clauses.has_negation(u) for u in units])
    for k, target in enumerate(self.targets):
      n = len(target.complies)
      texts = self._behaviour_texts[k]
      complies, violates = texts[:n], texts[n:]
      if not complies or not violates or not plain.any():
        continue
      sims = np.asarray(embedding.similarity(self._embedder, units, [*complies, *violates]))
      closer = sims[:, n:].max(axis=1) > sims[:, :n].max(axis=1)
      out[:, k] = plain & closer
    return out

  def means_many(self, texts: Sequence[str]) -> list[frozenset[str]]:
    """For each text, the ids of the targets it means."""
    todo = [t for t in dict.fromkeys(texts) if t not in self._means]
    if todo and self.targets:
      scores = self.scores(todo)
      for text, row in zip(todo, scores):
        ids = set()
        for target, score in zip(self.targets, row):
          ok = score >= self.rule.threshold_for(target.text)
          if self.judge is not None and score >= self.judge_floor:
            verdict = self.judge(text, target.text)
            ok = ok if verdict is None else verdict
          elif self.judge is not None:
            self.judge_skipped += 1
          if ok:
            ids.add(target.id)
        self._means[text] = frozenset(ids)
    return [self._means.get(t, frozenset()) for t in texts]

  def means(self, text: str,
            target_id: str | None = None) -> bool | frozenset[str]:
    """Targets `text` means; with `target_id`, whether it means that one."""
    ids = self.means_many([text])[0]
    return ids if target_id is None else target_id in ids

  def about_many(self, texts: Sequence[str]) -> list[frozenset[str]]:
    """For each text, the ids of the targets it concerns (looser)."""
    todo = [t for t in dict.fromkeys(texts) if t and t not in self._about]
    if todo and self.targets:
      refs: list[str] = []
      owner: list[str] = []
      for target, described in zip(self.targets, self._behaviour_texts):
        for ref in (target.text, *described):
          refs.append(ref)
          owner.append(target.id)
      sims = embedding.similarity(self._embedder, todo, refs)
      for text, row in zip(todo, sims):
        self._about[text] = frozenset(
            owner[j] for j, s in enumerate(row) if s >= self.related_threshold)
    return [self._about.get(t, frozenset()) for t in texts]
