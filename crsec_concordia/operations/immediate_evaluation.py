"""ImmediateEvaluation: is a candidate norm worth holding, and how much?

The paper's checks, first failure rejects: (1) consistent with its source,
(2) not a duplicate of a qualified norm, (3) really a norm, with the right
type (corrected if wrong), (4) not in conflict with a qualified norm; then a
utility from the agent's own perspective.

Shaped for small models as well as strong ones: an embedding-similarity
duplicate check and a check for content naming a known person come before
any call ("not a norm" is decided without the model); duplicate and
conflict are judged pairwise against the most similar held norm (a
committed norm about the same thing before any other), only when one is
about the same thing, and before the call that judges the candidate
against its source (supported, type, utility), so a duplicate costs one
call, not two. A candidate both unsupported and a duplicate is rejected
either way; its reason is then "duplicate". The trials:
docs/trials/operations.md#immediateevaluation.
"""

import dataclasses
import re

from crsec_concordia import embedding
from crsec_concordia.embedding import SentenceEmbedder
from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.models.base import StructuredModel
from crsec_concordia.name_patterns import pattern_of
from crsec_concordia.norms import PersonalNorm, RejectionReason
from crsec_concordia.operations.base import (BOOLEAN, NORM_TYPE, NORM_TYPE_HELP,
                                              UTILITY, FailureSink, obj,
                                              structured_call)
from crsec_concordia.operations.names import IMMEDIATE_EVALUATION
from crsec_concordia.operations.norm_type import settled_type

OP = IMMEDIATE_EVALUATION
# MiniLM's cosines (a component reads its embedder's: `duplicate` and
# `related_norms`, embedder_thresholds.py): a duplicate without asking, and
# a held norm near enough to be compared with the candidate.
DEFAULT_DUPLICATE_THRESHOLD = MINILM_THRESHOLDS.duplicate


@dataclasses.dataclass
class Verdict:
  accepted: bool
  reason: RejectionReason | None = None
  detail: str = ""
  type: str | None = None
  utility: int | None = None
  llm_calls: int = 0


SOURCE_SCHEMA = obj({"supported": BOOLEAN, "type": NORM_TYPE,
                    "utility": UTILITY})
PAIR_SCHEMA = obj({"same_meaning": BOOLEAN, "opposite": BOOLEAN})
DEFAULT_RELATED_THRESHOLD = MINILM_THRESHOLDS.related_norms


def source_prompt(name: str, persona: str, candidate: PersonalNorm) -> str:
  """The questions first, the candidate and its source last (what a
  server's prompt cache can reuse comes first)."""
  return (
      "A statement is checked against the source it came from, both "
      "below.\n"
      "supported: does the source support the statement? true or false.\n"
      f"type: {NORM_TYPE_HELP}\n"
      f"utility: how important the rule is to {name} ({persona[:200]}), "
      "from 1 (may be disregarded) to 100 (must always be followed).\n\n"
      f"Source:\n{candidate.source_text[:900]}\n\n"
      f"Statement: {candidate.content}")


def pair_prompt(candidate: PersonalNorm, held: PersonalNorm) -> str:
  return (
      f"Rule A: {candidate.content}\nRule B: {held.content}\n\n"
      "same_meaning: do A and B ask for the same behaviour? true or false.\n"
      "opposite: would following rule A make someone break rule B? true or "
      "false.")


def names_person(content: str, names: list[str]) -> str | None:
  for full in names:
    for part in [full] + full.split():
      if len(part) > 2 and pattern_of(rf"\b{re.escape(part)}\b").search(
          content):
        return full
  return None


def immediate_evaluation(
    model: StructuredModel,
    embedder: SentenceEmbedder,
    *,
    name: str,
    persona: str,
    candidate: PersonalNorm,
    held: list[PersonalNorm],
    known_names: list[str],
    on_failure: FailureSink | None,
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
    related_threshold: float = DEFAULT_RELATED_THRESHOLD,
) -> Verdict | None:
  """The verdict on `candidate` against `held` (its own sources excluded).

  Returns None if the model failed (reported through `on_failure`): the
  candidate then stays unevaluated rather than being accepted by default.
  """
  nearest, similarity = None, 0.0
  if held:
    sims = embedding.similarity(embedder, [candidate.content],
                                [n.content for n in held])[0]
    best = int(sims.argmax())
    nearest, similarity = held[best], float(sims[best])
    if similarity >= duplicate_threshold:
      return Verdict(False, RejectionReason.DUPLICATE,
                     f"embedding similarity {similarity:.2f} with "
                     f"{nearest.id} ({nearest.content})")
    # A committed norm the candidate is about is the one it is judged
    # against, even if another is nearer: whether it contradicts what the
    # agent is committed to is the question that matters.
    committed = [i for i, n in enumerate(held) if n.committed
                 and sims[i] >= related_threshold]
    if committed:
      best = max(committed, key=lambda i: sims[i])
      nearest, similarity = held[best], float(sims[best])
  if person := names_person(candidate.content, known_names):
    return Verdict(False, RejectionReason.NOT_A_NORM, f"names {person}")
  pair, calls = None, 0
  if nearest is not None and similarity >= related_threshold:
    pair = structured_call(model, OP, pair_prompt(candidate, nearest),
                           PAIR_SCHEMA, on_failure=on_failure, max_tokens=24,
                           temperature=0.0)
    if pair is None:
      return None
    calls = 1
    if pair["same_meaning"]:
      return Verdict(False, RejectionReason.DUPLICATE,
                     f"same as {nearest.id} ({nearest.content})",
                     llm_calls=calls)
  answer = structured_call(model, OP, source_prompt(name, persona, candidate),
                           SOURCE_SCHEMA, on_failure=on_failure,
                           max_tokens=64, temperature=0.0)
  if answer is None:
    return None
  v = dict(llm_calls=calls + 1,
           type=settled_type(candidate.content, answer["type"]),
           utility=answer["utility"])
  if not answer["supported"]:
    return Verdict(False, RejectionReason.INCONSISTENT_WITH_SOURCE, **v)
  if pair is not None and pair["opposite"]:
    return Verdict(False, RejectionReason.CONFLICTS_WITH_NORM,
                   f"contradicts {nearest.id} ({nearest.content})", **v)
  detail = "type corrected" if v["type"] != candidate.type else ""
  return Verdict(True, None, detail, **v)
