"""A normative agent in ten lines: CRSEC's prefab, any model, any embedder.

`compose` is the README's composition: the `normative__Entity` prefab built
with any Concordia LanguageModel and any function from text to vector,
which reaches the agent's components through the memory bank, as in a
Concordia simulation. Run as a script it uses the embedded model (or
CRSEC_BASE_URL/CRSEC_MODEL) and the MiniLM embedder: the `embedded` and
`embeddings` extras.

Run: .venv/bin/python examples/compose_normative_agent.py
"""

import copy
from typing import Any

from concordia.agents import entity_agent_with_logging
from concordia.associative_memory import basic_associative_memory
from concordia.language_model import language_model

from crsec_concordia.components import CONFLICT_DETECTOR_KEY
from crsec_concordia.embedding import SentenceEmbedder, shared_embedder
from crsec_concordia.models import EndpointConfig, make_model
from crsec_concordia.prefabs import PREFABS


def compose(my_model: language_model.LanguageModel,
            my_embedder: SentenceEmbedder
            ) -> entity_agent_with_logging.EntityAgentWithLogging:
  """Builds Carlos, who holds "No smoking indoors.", shows him a smoker and
  has him act."""
  prefab = copy.deepcopy(PREFABS["normative__Entity"])
  prefab.params = {
      "name": "Carlos Gomez", "persona": "A poet who cares about clean air.",
      "role": "entrepreneur", "setting": "Hobbs Cafe",
      "initial_norms": [{"content": "No smoking indoors.",
                         "type": "injunctive", "utility": 90}]}
  bank = basic_associative_memory.AssociativeMemoryBank(
      sentence_embedder=my_embedder)
  carlos = prefab.build(my_model, bank)
  carlos.observe("[Day 1 09:10 | step 1] Tom Gomez (indoors): Tom lights a "
                 "cigarette at the next table.")
  print(carlos.act())
  return carlos


def conflicts(agent: entity_agent_with_logging.EntityAgentWithLogging
              ) -> list[dict[str, Any]]:
  """The conflicts the agent's ConflictDetector recorded: its channel in
  the agent's Concordia measurements."""
  return [datum["Value"]
          for datum in agent.measurements.get_channel(CONFLICT_DETECTOR_KEY)
          if datum.get("Key") == "conflict"]


def main() -> None:
  carlos = compose(make_model(EndpointConfig.resolve(), seed=7),
                   shared_embedder())
  for conflict in conflicts(carlos):
    print(f"conflict: {conflict['actor']} against {conflict['norm']!r} "
          f"({conflict['evidence']!r})")


if __name__ == "__main__":
  main()
