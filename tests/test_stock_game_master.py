"""examples/stock_game_master.py: CRSEC agents under Concordia's stock game
master and engine, driven by a plain Concordia LanguageModel.

The same wiring as the example, with a scripted text-only model: the
agents' JSON answers come from the scripted café (the schema is in the
prompt, as the adapter states it), and every narration of the stock game
master is one free-text sentence about the smoker. A conflict must come out
of that free text (ReadEvents, then DetectConflict) and the summary must
name it.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

from concordia.language_model import language_model

from tests import crsec_script as cs

_PATH = Path(__file__).resolve().parent.parent / "examples/stock_game_master.py"
_SPEC = importlib.util.spec_from_file_location("stock_game_master", _PATH)
example = importlib.util.module_from_spec(_SPEC)
sys.modules["stock_game_master"] = example
_SPEC.loader.exec_module(example)

NARRATION = "Carlos Gomez lit a cigarette at his table."
SMOKER, OWNER, STUDENT = "Carlos Gomez", "Isabella Rodriguez", "Tom Moreno"


class ScriptedConcordiaModel(language_model.LanguageModel):
  """A Concordia LanguageModel answering by prompt text, text only.

  Agents' structured calls (the adapter's prompt ends with the schema) get
  the scripted café's JSON as text; the stock game master's open questions
  get NARRATION (or names, or an action spec, where it asks for those);
  its yes/no questions get "No", except that a draft is well formatted.
  """

  def __init__(self):
    self._script = cs.cafe_model()
    created = cs.cafe_model().sample_json  # The café's five norms ...
    self._script.add_rule(cs.CREATE, lambda prompt, schema: {
        "norms": created(prompt, schema={"type": "object"})["norms"][
            :schema["properties"]["norms"]["maxItems"]]}, first=True)
    # ReadEvents: the smoker's deed, where the text holds it.
    self._script.add_rule(cs.READ, lambda prompt: {"events": [
        {"actor": SMOKER, "deed": "lit a cigarette at his table",
         "place": "indoors"}] if NARRATION in prompt else []}, first=True)
    self.prompts: list[str] = []

  def sample_text(self, prompt: str, **kwargs) -> str:
    del kwargs
    self.prompts.append(prompt)
    if "JSON schema:\n" in prompt:
      schema = json.loads(
          prompt.rsplit("JSON schema:\n", 1)[1].split("\n\n")[0])
      answer = self._script.sample_json(
          prompt.split("\n\nAnswer with one")[0], schema)
      return f"```json\n{json.dumps(answer)}\n```"
    question = prompt.rsplit("Question:", 1)[-1]
    if "Which entities are aware" in question:
      return f"{SMOKER}, {OWNER}, {STUDENT}"
    if "action spec format" in question:
      return json.dumps({"call_to_action": "What does {name} do next?",
                         "output_type": "free", "options": [], "tag": None})
    return NARRATION

  def sample_choice(self, prompt, responses, *, seed=None):
    del seed
    question = prompt.rsplit("Question:", 1)[-1]
    options = dict(re.findall(r"\((\w)\) (Yes|No)\n", question))
    want = "Yes" if "formatted correctly" in question else "No"
    key = next(k for k, v in options.items() if v == want)
    return list(responses).index(key), key, {}


def _run(**kwargs):
  model = ScriptedConcordiaModel()
  outcome = example.run_example(model, cs.constant_embedder, steps=3,
                                echo=lambda line: None, **kwargs)
  return model, outcome


def test_a_conflict_is_detected_from_the_stock_game_masters_free_text():
  model, outcome = _run()
  owner = outcome.findings[OWNER]
  assert [(c["actor"], c["behaviour"], c["norm"])
          for c in owner["conflicts"]] == [
              (SMOKER, "lit a cigarette at his table", "No smoking indoors.")]
  # What was read is the stock game master's narration, in free text.
  read = [p for p in model.prompts if re.search(cs.READ, p)]
  assert len(read) == 1 and NARRATION in read[0]
  assert [c["content"] for c in owner["created"]][0] == "No smoking indoors."
  # The student, who starts with no norms, identified one by observing.
  assert outcome.findings[STUDENT]["identified"]
  assert outcome.findings[SMOKER] == {"crsec": False}
  # Every agent acted once, in the stock prefab's fixed order.
  assert [a.split(":")[0] for a in outcome.actions] == [
      "step 1", "step 2", "step 3"]
  assert outcome.agent_calls["ReadEvents"] >= 1
  # Concordia's FixedActionSpec answers the action spec: the one call of
  # each such act is the stock game master's summary of its memories.
  assert outcome.game_master_calls["next_action_spec"] == 3
  assert outcome.game_master_calls["make_observation"] >= 3 * 3
  summary = example.summarize(outcome)
  assert (f'{SMOKER}: "lit a cigarette at his table" (indoors) breaks '
          '"No smoking indoors."') in summary
  assert f"talks asked for (the stock game master holds none):\n    with " \
         f"{SMOKER}" in summary
  assert "tokens: not reported by this model" in summary


def test_with_llm_turns_the_game_master_asks_the_model_for_action_specs():
  model, outcome = _run(llm_turns=True)
  assert any("Example formatted action specs" in p for p in model.prompts)
  assert outcome.game_master_calls["next_action_spec"] >= 3 * 2
  assert len(outcome.actions) == 3
