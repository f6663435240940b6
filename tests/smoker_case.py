"""The smoker case shared by its test and its pass-rate benchmark."""

from __future__ import annotations

import copy

from concordia.associative_memory import basic_associative_memory

from crsec_concordia import embedding
from crsec_concordia import observations as obs
from crsec_concordia.components import NORM_MEMORY_KEY
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.prefabs import PREFABS

SMOKER_CASE_SEED = 1
TARGET = "No smoking indoors."
MATCH_THRESHOLD = 0.5

CONVERSATION = obs.format_conversation(
    obs.Stamp(1, "09:12", 2), "Abigail Chen", "Carlos Gomez",
    "smoking indoors",
    [("Abigail Chen", "Excuse me, Carlos, smoking isn't allowed inside the "
      "cafe. The smoke bothers everyone here. Could you smoke outside?"),
     ("Carlos Gomez", "Oh, I didn't think about that. Sorry, I'll put it out."),
     ("Abigail Chen", "Thank you, I really appreciate it."),
     ("Carlos Gomez", "Of course. I'll step outside next time I want one.")])


def smoker_adopts(model) -> tuple[bool, float, list[str]]:
  """(adopted?, best cosine to the target, the qualified norms)."""
  prefab = copy.deepcopy(PREFABS["normative__Entity"])
  prefab.params = {
      "name": "Carlos Gomez", "role": "ordinary", "setting": "Hobbs Cafe",
      "persona": ("Carlos Gomez, 50, is a poet who smokes and likes to read "
                  "his verses aloud; he is warm, a little absent-minded, and "
                  "does not like to upset people.")}
  embedder = shared_embedder()
  agent = prefab.build(model, basic_associative_memory.AssociativeMemoryBank(
      sentence_embedder=embedder))
  agent.observe(CONVERSATION)
  norms = [n.content for n in
           agent.get_component(NORM_MEMORY_KEY).database.qualified()]
  if not norms:
    return False, 0.0, norms
  best = float(embedding.similarity(embedder, [TARGET], norms).max())
  return best >= MATCH_THRESHOLD, best, norms
