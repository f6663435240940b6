"""LongTermSynthesis: condense many specific norms into a few abstract ones.

When the utilities accepted since the last synthesis pass the threshold, the
agent groups its qualified norms into themes (ClassifySpecificNorms), writes
one abstract norm for each theme of two or more (SynthesizeNorm) with a
weight per source norm; its utility is the weighted average of the sources'.
The evaluator then runs ImmediateEvaluation on it against the norms other
than its own sources (the original compared it with the very norms it
replaces, so every abstract norm "duplicated" its sources).
"""

from __future__ import annotations

import dataclasses

from crsec_concordia.models.base import StructuredModel
from crsec_concordia.norms import PersonalNorm, clamp_utility
from crsec_concordia.operations.base import (NORM_TYPE, NORM_TYPE_HELP,
                                              FailureSink, integer, numbered,
                                              obj, structured_call, text)
from crsec_concordia.operations.norm_type import settled_type

CLASSIFY_OP = "ClassifySpecificNorms"
SYNTHESIZE_OP = "SynthesizeNorm"


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
  answer = structured_call(model, CLASSIFY_OP, prompt, classify_schema(len(norms)),
                           on_failure=on_failure, max_tokens=48 * len(norms))
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
  answer = structured_call(model, SYNTHESIZE_OP, prompt,
                           synthesize_schema(len(norms)),
                           on_failure=on_failure, max_tokens=96)
  if answer is None:
    return None
  return AbstractNorm(theme, answer["content"],
                      settled_type(answer["content"], answer["type"]), norms,
                      answer["weights"])
