"""The workrooms' invented custom (issue 62): a target no model can know.

tea_crates.yaml's target is which of two equal crates a used cup goes in;
only its entrepreneur's persona names either. The scenario loads, a
scripted model plays two of its slots, its probe file and its labelled
norms load, and the stated-belief reader reads those norms as the
matcher's measured figures say it does: no expectation here beyond what
the labels and data/matcher_quality.json state.
"""

from __future__ import annotations

import json
import re
import types

import pandas as pd
import pytest

from crsec_concordia import runner
from crsec_concordia.calibration import probes
from crsec_concordia.interviews.stated_table import STATED_COLUMNS
from crsec_concordia.metrics.classifiers import labels
from crsec_concordia.metrics.classifiers import measured as matcher_error
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.measure.stated import stated_targets
from crsec_concordia.rundir.format import STATED_BELIEF_CSV
from crsec_concordia.scenarios import load_scenario
from crsec_concordia.testing import SchemaModel

NAME = "tea_crates"
VENUE = "workrooms"
TARGET = "cups_in_yellow_crate"
# Words that name either way of the custom.
WAYS = re.compile(r"\b(yellow|grey|crates?)\b", re.I)


def test_the_scenario_loads_and_only_its_entrepreneur_names_a_way():
  scenario = load_scenario(NAME)
  [target] = scenario.target_norms
  assert target.id == TARGET and len(target.aliases) >= 5
  assert set(target.complies) | set(target.violates) == set(
      scenario.behaviour_ids)
  [entrepreneur] = [a for a in scenario.agents if a.is_entrepreneur]
  assert WAYS.search(entrepreneur.persona)
  assert [n.content for n in entrepreneur.initial_norms] == [target.text]
  others = [a for a in scenario.agents if not a.is_entrepreneur]
  assert len(others) == 5
  for agent in others:
    said = " ".join([agent.persona, agent.goal or "",
                     *map(str, agent.preferences.values())])
    assert not WAYS.search(said), agent.name
  # The premise names both crates and favours neither.
  assert "grey" in scenario.premise and "yellow" in scenario.premise
  for occasion in scenario.occasions:
    assert set(occasion.behaviours) == set(scenario.behaviour_ids)


def test_its_probe_file_labels_both_ways_and_near_misses():
  scenario = load_scenario(NAME)
  assert NAME in probes.probed_venues()
  cases = probes.load_probes(probes.probes_path(scenario), scenario)
  tags = [tuple(c.behaviours) for c in cases.referee]
  for way in scenario.behaviour_ids:
    assert tags.count((way,)) >= 4, way
  # Near misses name a crate yet put no cup in one.
  assert sum(not c.behaviours and bool(WAYS.search(c.action))
             for c in cases.referee) >= 4
  assert {c.breaks for c in cases.conflicts} == {True, False}


def test_its_labelled_norms_load_split_and_held_out():
  items = [i for i in labels.load_items() if i.venue == VENUE]
  assert labels.HELD_OUT_VENUES[VENUE] == NAME
  assert VENUE not in labels.VENUES  # Nothing is chosen or fitted on them.
  assert 60 <= len(items) <= 120
  for split in labels.SPLITS:
    half = [i for i in items if i.split == split]
    kinds = {i.kind for i in half}
    assert {"opposite", "inverted", "near_miss", "unrelated",
            "paraphrase"} <= kinds
    assert any(i.targets for i in half) and any(not i.targets for i in half)
  for item in items:
    assert set(item.targets) <= {TARGET}
    # "The other way" is never labelled as the custom.
    if re.search(r"\bgrey\b", item.text) and not re.search(
        r"not the grey", item.text):
      assert not item.targets, item.text


def _stated(tmp_path, texts: list[str]) -> types.SimpleNamespace:
  """A run directory whose only record is an end-of-run table in which
  agent k stated texts[k]."""
  rows = [{"phase": "end", "slot": 5, "agent": f"agent {k:03d}",
           "role": "ordinary", "model": "main", "rule_index": 0,
           "rule": text, "error": ""} for k, text in enumerate(texts)]
  pd.DataFrame(rows, columns=STATED_COLUMNS).to_csv(
      tmp_path / STATED_BELIEF_CSV, index=False)
  return types.SimpleNamespace(path=tmp_path)


@pytest.mark.parametrize("split", labels.SPLITS)
def test_stated_rules_are_read_as_the_measured_figures_say(tmp_path,
                                                           embedder, split):
  """Every labelled workrooms norm stated by one agent: the agents read as
  stating the custom are the matcher's hits, as many as its recorded
  counts on this half say (the opposite way included, which it confuses
  with the custom at the recorded rate)."""
  items = [i for i in labels.load_items()
           if i.venue == VENUE and i.split == split]
  matcher = NormMatcher(labels.venue_targets(VENUE), embedder=embedder,
                        behaviours=labels.venue_behaviours(VENUE))
  read = stated_targets(_stated(tmp_path, [i.text for i in items]),
                        matcher)["end"]
  said = [TARGET in read[f"agent {k:03d}"] for k in range(len(items))]
  meant = [TARGET in i.targets for i in items]
  recorded = matcher_error.load_measured()[split][TARGET]
  assert sum(s and m for s, m in zip(said, meant)) == recorded["tp"]
  assert sum(s and not m for s, m in zip(said, meant)) == recorded["fp"]
  assert sum(m and not s for s, m in zip(said, meant)) == recorded["fn"]


def _deed(prompt: str, schema) -> dict[str, str]:
  """Each agent's deed: the entrepreneur's cup in the yellow crate, the
  others' in the grey one."""
  del schema
  name = re.search(r"Reply as ([^,]+),", prompt).group(1)
  crate = "yellow" if name == "Ines Okafor" else "grey"
  return {"answer": f"{name} puts a used mug in the {crate} crate."}


def test_a_scripted_run_plays_two_slots(tmp_path, embedder, monkeypatch):
  monkeypatch.setenv("CRSEC_CACHE_DIR", str(tmp_path / "cache"))
  model = SchemaModel([(r"Reply as [^,]+, in character and in the third",
                        _deed)], keep_prompts=False)
  run_dir = runner.run_episode(NAME, arm="normative", seed=1,
                               out_dir=tmp_path / "run", steps=2,
                               progress=False, model=model, embedder=embedder)
  with open(run_dir / "events.jsonl", encoding="utf-8") as f:
    records = [json.loads(line) for line in f]
  agents = {a.name for a in load_scenario(NAME).agents}
  for step in (1, 2):
    acted = {r["actor"] for r in records
             if r["kind"] == "action" and r["step"] == step}
    assert acted == agents, step
  assert len([r for r in records if r["kind"] == "step"]) == 2
