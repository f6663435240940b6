"""NormEvaluator: CRSEC's Evaluation module as a Concordia component.

After each observation (once the identifier has added its candidates in
pre_observe) it runs ImmediateEvaluation on every pending candidate, in
order, and, when the utilities accepted since the last synthesis pass the
threshold (paper: 350), LongTermSynthesis. Ablating immediate evaluation
accepts candidates as proposed; ablating synthesis never condenses.
A committed norm (a committed agent's) takes no part in synthesis: it is
neither grouped nor replaced.
"""

from __future__ import annotations

import threading

from concordia.language_model import language_model
from concordia.typing import entity_component

from crsec_concordia import embedding
from crsec_concordia.gate_tally import DUPLICATE_PRECHECK, GateTally
from crsec_concordia.components._shared import UsesNormMemory
from crsec_concordia.components.norm_memory import NORM_MEMORY_KEY
from crsec_concordia.embedding import SentenceEmbedder
from crsec_concordia.models.concordia_adapter import structured_view
from crsec_concordia.norms import Origin, PersonalNorm, RejectionReason
from crsec_concordia.operations import Verdict, immediate_evaluation
from crsec_concordia.operations.long_term_synthesis import (
    Synthesized, is_due, long_term_synthesis)
from crsec_concordia.rundir.format import SYNTHESIS, VERDICT

NORM_EVALUATOR_KEY = "NormEvaluator"


class NormEvaluator(UsesNormMemory, entity_component.ContextComponent,
                    entity_component.ComponentWithLogging):
  """Evaluates candidate norms and condenses qualified ones."""

  def __init__(self, model: language_model.LanguageModel,
               embedder: SentenceEmbedder, *,
               synthesis_model: language_model.LanguageModel | None = None,
               synthesis_threshold: int = 350,
               immediate_evaluation: bool = True, synthesis: bool = True,
               duplicate_threshold: float | None = None,
               norm_memory_key: str = NORM_MEMORY_KEY):
    """Creates the evaluator.

    Args:
      model: the model for ImmediateEvaluation (any Concordia LanguageModel;
        a tagged view counts its calls apart).
      embedder: the sentence embedder of the duplicate pre-check: any
        function from text to vector, such as the simulation's.
      synthesis_model: the model for LongTermSynthesis (defaults to `model`).
      synthesis_threshold: accepted utility that triggers synthesis.
      immediate_evaluation: the checks (off in its ablation).
      synthesis: long-term synthesis (off in its ablation).
      duplicate_threshold: cosine at or above which a candidate is a
        duplicate without asking the model (None: the embedder's measured
        one, embedder_thresholds.py; an embedder nobody measured asks the
        model of every candidate).
      norm_memory_key: the key of the entity's NormMemory.
    """
    super().__init__()
    self._model = structured_view(model)
    # Each candidate is compared with the same held norms: cached vectors.
    self._embedder = embedding.cached(embedder)
    self._synthesis_model = structured_view(synthesis_model or model)
    self._threshold = synthesis_threshold
    self._evaluate = immediate_evaluation
    self._synthesis = synthesis
    floors = embedding.thresholds_of(embedder)
    self._duplicate_threshold = (floors.duplicate if duplicate_threshold
                                 is None else duplicate_threshold)
    self._related_threshold = floors.related_norms
    self._norm_memory_key = norm_memory_key
    self._lock = threading.Lock()
    self._failed: set[str] = set()
    # Candidates rejected as duplicates with no model call (gate_tally.py).
    self._gates = GateTally()

  def _verdict(self, candidate: PersonalNorm, held: list[PersonalNorm]
               ) -> Verdict | None:
    memory = self.norm_memory
    if not self._evaluate:
      return Verdict(True, None, "immediate evaluation ablated",
                     candidate.type, candidate.utility)
    verdict = immediate_evaluation(
        self._model, self._embedder, name=memory.agent_name,
        persona=memory.persona, candidate=candidate, held=held,
        known_names=[n for n in self.journal.known_names if n != ""],
        on_failure=self.journal.record_failure,
        duplicate_threshold=self._duplicate_threshold,
        related_threshold=self._related_threshold)
    self._gates.add(DUPLICATE_PRECHECK, int(
        verdict is not None and verdict.reason == RejectionReason.DUPLICATE
        and not verdict.llm_calls), self._logging_channel)
    return verdict

  def gate_counts(self) -> dict[str, int]:
    """The candidates its duplicate check rejected unasked, so far."""
    return self._gates.counts()

  def _apply(self, candidate: PersonalNorm, verdict: Verdict,
             utility: int | None = None) -> None:
    memory = self.norm_memory
    db, stamp = memory.database, self.journal.last_stamp
    step, time = (stamp.step, stamp.time) if stamp else (0, None)
    if verdict.accepted:
      db.qualify(candidate.id, utility or verdict.utility or candidate.utility,
                 type=verdict.type, step=step, time=time)
    else:
      db.reject(candidate.id, verdict.reason, verdict.detail, step=step,
                time=time)
    norm = db.get(candidate.id)
    self._record(VERDICT, norm_id=norm.id, content=norm.content,
                  accepted=verdict.accepted,
                  reason=str(verdict.reason) if verdict.reason else None,
                  detail=verdict.detail, type=norm.type, utility=norm.utility,
                  origin=norm.origin, llm_calls=verdict.llm_calls)

  def evaluate_pending(self) -> None:
    """ImmediateEvaluation of every candidate not yet judged, in order."""
    db = self.norm_memory.database
    for candidate in db.candidates():
      if candidate.id in self._failed or candidate.origin == Origin.SYNTHESIS:
        continue
      verdict = self._verdict(candidate, db.qualified())
      if verdict is None:
        self._failed.add(candidate.id)  # Recorded; not retried every step.
        continue
      self._apply(candidate, verdict)

  def synthesize(self) -> None:
    """LongTermSynthesis (operations/long_term_synthesis.py): each abstract
    norm judged as a candidate is, and recorded."""
    memory = self.norm_memory
    stamp = self.journal.last_stamp

    def judge(candidate: PersonalNorm, held: list[PersonalNorm],
              utility: int) -> Verdict | None:
      verdict = self._verdict(candidate, held)
      if verdict is not None:
        self._apply(candidate, verdict, utility=utility)
      return verdict

    def synthesized(done: Synthesized) -> None:
      abstract, norm = done.abstract, done.candidate
      self._record(SYNTHESIS, abstract_id=norm.id, theme=abstract.theme,
                   content=norm.content, type=norm.type,
                   sources=[n.id for n in abstract.sources],
                   weights=abstract.weights, utility=abstract.utility,
                   accepted=done.accepted)

    long_term_synthesis(
        self._synthesis_model, memory.database, name=memory.agent_name,
        step=stamp.step if stamp else 0, time=stamp.time if stamp else None,
        judge=judge, on_synthesized=synthesized,
        on_failure=self.journal.record_failure)

  def waits_on_model(self, hook: str) -> bool:
    """post_observe may call ImmediateEvaluation and LongTermSynthesis."""
    return hook == "post_observe"

  def post_observe(self) -> str:
    with self._lock:
      self.evaluate_pending()
      if self._synthesis and is_due(self.norm_memory.database,
                                    self._threshold):
        self.synthesize()
    return ""

  def get_state(self) -> entity_component.ComponentState:
    with self._lock:
      return {"failed": sorted(self._failed), "gates": self._gates.counts()}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self._failed = set(state.get("failed", []))
    self._gates.restore(state.get("gates"))
