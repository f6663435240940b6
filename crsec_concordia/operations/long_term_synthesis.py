"""LongTermSynthesis: condense many specific norms into a few abstract ones.

When the utilities accepted since the last synthesis pass the threshold
(`is_due`), the agent groups its qualified norms into themes (the paper's
step ClassifySpecificNorms), writes one abstract norm for each theme of two
or more (the step SynthesizeNorm) with a weight per source norm; its
utility is the weighted average of the sources'. The abstract norm goes
through ImmediateEvaluation against the norms other than its own sources
(the original compared it with the very norms it replaces, so every
abstract norm "duplicated" its sources) and, accepted, replaces them; the
counter starts again (`long_term_synthesis`). The two steps are one
operation: their calls are counted and their failures recorded under its
name, the stage named beside it (`"stage"`; a record's `step` is its
slot), so that a reader finds the operation's failures where its usage is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from crsec_concordia.models.base import StructuredModel
from crsec_concordia.norms import (NormDatabase, Origin, PersonalNorm,
                                   RejectionReason, clamp_utility)
from crsec_concordia.operations.base import (NORM_TYPE, NORM_TYPE_HELP,
                                              FailureSink, integer, numbered,
                                              obj, structured_call, text)
from crsec_concordia.operations.immediate_evaluation import Verdict
from crsec_concordia.operations.names import LONG_TERM_SYNTHESIS
from crsec_concordia.operations.norm_type import settled_type

OP = LONG_TERM_SYNTHESIS
# The operation's two stages, as the paper names them: a failure record's
# `stage`.
CLASSIFY_STEP = "ClassifySpecificNorms"
SYNTHESIZE_STEP = "SynthesizeNorm"


def in_step(on_failure: FailureSink | None, step: str
            ) -> FailureSink | None:
  """`on_failure` with the stage named after the operation in its records."""
  if on_failure is None:
    return None

  def sink(failure) -> None:
    record = dict(failure)
    at = list(record).index("op") + 1 if "op" in record else len(record)
    items = list(record.items())
    on_failure(dict(items[:at] + [("stage", step)] + items[at:]))
  return sink


def classify_schema(n: int) -> dict:
  theme = obj({"theme": text(60),
               "norms": {"type": "array", "items": integer(1, n),
                         "minItems": 1, "maxItems": n}})
  return obj({"themes": {"type": "array", "items": theme, "minItems": 1,
                         "maxItems": max(1, n)}})


def synthesize_schema(n: int) -> dict:
  return obj({"content": text(120), "type": NORM_TYPE,
              "weights": {"type": "array", "items": integer(1, 10),
                          "minItems": n, "maxItems": n}})


@dataclasses.dataclass
class AbstractNorm:
  theme: str
  content: str
  type: str
  sources: list[PersonalNorm]
  weights: list[int]

  @property
  def utility(self) -> int:
    total = sum(self.weights)
    return clamp_utility(
        sum(w * n.utility for w, n in zip(self.weights, self.sources)) / total)


def classify_specific_norms(model: StructuredModel, *, name: str,
                            norms: list[PersonalNorm],
                            on_failure: FailureSink | None
                           ) -> list[tuple[str, list[PersonalNorm]]] | None:
  """Themes with their norms; each norm in at most one theme (first wins)."""
  # No example topics: named topics of one venue were copied as themes in
  # another. The theme is asked for in the norms' own words instead.
  prompt = (
      f"Norms {name} holds:\n{numbered([n.content for n in norms])}\n\n"
      "Group these norms by topic: norms about the same kind of behaviour go "
      "together. Each group has one topic; do not put everything in one "
      "group and do not make a group for every norm.\n"
      "themes: a list of {theme, norms}: theme names the behaviour the "
      "group is about in two to four words taken from its norms; norms are "
      "the numbers of the norms in the group.")
  answer = structured_call(model, OP, prompt, classify_schema(len(norms)),
                           on_failure=in_step(on_failure, CLASSIFY_STEP),
                           max_tokens=48 * len(norms))
  if answer is None:
    return None
  seen: set[int] = set()
  groups = []
  for item in answer["themes"]:
    members = [i for i in dict.fromkeys(item["norms"]) if i not in seen]
    seen.update(members)
    groups.append((item["theme"], [norms[i - 1] for i in members]))
  return groups


def synthesize_norm(model: StructuredModel, *, theme: str,
                    norms: list[PersonalNorm],
                    on_failure: FailureSink | None) -> AbstractNorm | None:
  prompt = (
      f"Specific norms about {theme}:\n{numbered([n.content for n in norms])}"
      "\n\ncontent: ONE concise general norm that can replace all of them "
      "(one short sentence, naming no person).\n"
      f"type: {NORM_TYPE_HELP}\n"
      f"weights: for each of the {len(norms)} norms in order, how much of it "
      "the new norm carries, 1 to 10.")
  answer = structured_call(model, OP, prompt, synthesize_schema(len(norms)),
                           on_failure=in_step(on_failure, SYNTHESIZE_STEP),
                           max_tokens=96)
  if answer is None:
    return None
  return AbstractNorm(theme, answer["content"],
                      settled_type(answer["content"], answer["type"]), norms,
                      answer["weights"])


def is_due(db: NormDatabase, threshold: int) -> bool:
  """Whether the utilities accepted since the last synthesis pass
  `threshold` (paper: 350)."""
  return db.counter > threshold


@dataclasses.dataclass(frozen=True)
class Synthesized:
  """An abstract norm written, added as a candidate and judged."""
  abstract: AbstractNorm
  candidate: PersonalNorm
  accepted: bool


# Judges an abstract norm's candidate against the held norms
# (ImmediateEvaluation) and applies the verdict to the database, accepted
# with the utility given (the weighted average of its sources'), and
# records it; None: the evaluation failed.
SynthesisJudge = Callable[[PersonalNorm, list[PersonalNorm], int],
                          Verdict | None]


def long_term_synthesis(model: StructuredModel, db: NormDatabase, *,
                        name: str, step: int, time: str | None,
                        judge: SynthesisJudge,
                        on_synthesized: Callable[[Synthesized], None],
                        on_failure: FailureSink | None) -> None:
  """One synthesis over the qualified norms but committed ones (neither
  grouped nor replaced); resets the counter.

  Each abstract norm is added as a candidate (at `step`, `time`) and given
  to `judge` with the norms it does not replace; accepted, it replaces its
  sources; a failed judgement rejects it. `on_synthesized` hears of each,
  after its verdict, in theme order.
  """
  norms = db.revisable()
  groups = classify_specific_norms(model, name=name, norms=norms,
                                   on_failure=on_failure) if norms else None
  for theme, members in groups or ():
    if len(members) < 2:
      continue
    abstract = synthesize_norm(model, theme=theme, norms=members,
                               on_failure=on_failure)
    if abstract is None:
      continue
    source_ids = [n.id for n in members]
    candidate = db.add(
        abstract.content, abstract.type, abstract.utility,
        origin=Origin.SYNTHESIS, replaces=source_ids,
        source_text="\n".join(n.content for n in members), step=step,
        time=time)
    held = [n for n in db.qualified() if n.id not in source_ids]
    verdict = judge(candidate, held, abstract.utility)
    if verdict is None:
      db.reject(candidate.id, RejectionReason.INCONSISTENT_WITH_SOURCE,
                "evaluation failed; see the failure record")
      continue
    if verdict.accepted:
      db.replace(source_ids, candidate.id)
    on_synthesized(Synthesized(abstract, db.get(candidate.id),
                               verdict.accepted))
  db.reset_counter()
