"""Nothing dropped in silence: what each similarity gate skipped is counted.

A scripted run of the tiny café (tests/test_runner.py) with MiniLM: the
ConflictDetector's relevance floor keeps some deeds from any judgement,
and gates.json, Concordia's log (each component's "skipped" entries) and
the report say how many. The counts are sums, so they do not depend on
which thread finished first (two runs with opposite delays give the same
file); a resumed run counts on from its checkpoint (test_runner.same_run
compares gates.json too).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from crsec_concordia import cli, gate_tally, runner
from crsec_concordia.components.conflict_detector import ConflictDetector
from crsec_concordia.components.port import NO_PORT
from crsec_concordia.game_masters.referee import Referee
from crsec_concordia.metrics.classifiers.judge import LLMJudge
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.present.gate_lines import gate_lines
from crsec_concordia.models import ScriptedModel
from crsec_concordia.testing import bag_of_words
from tests import test_runner as tr
from tests.test_matcher import TARGETS


def gates(run_dir: Path) -> dict:
  return json.loads((run_dir / "gates.json").read_text())


@pytest.fixture(scope="module")
def gated(tmp_path_factory, embedder) -> Path:
  return tr.run(tmp_path_factory.mktemp("gated"), embedder)


def test_gates_json_counts_each_agents_and_the_referees_skips(gated):
  counted = gates(gated)
  assert counted["completed_steps"] == 5
  # "sips a coffee." is about no norm Carlos holds, on MiniLM's scale.
  assert counted["agents"]["Carlos Gomez"][gate_tally.RELEVANCE_FLOOR] >= 1
  assert counted["totals"] == gate_tally.summed(
      [counted["game_master"], *counted["agents"].values()])
  # The referee's counts agree with what its records show.
  actions = [r for r in tr.records(gated) if r["kind"] == "action"]
  spared = sum(r.get("referee_asked") is False for r in actions)
  far = sum(len(r.get("far_from_action", ())) for r in actions)
  master = counted["game_master"]
  assert master.get(gate_tally.SPARED_FAR_ACTION, 0) == spared
  assert master.get(gate_tally.TAG_FLOOR, 0) == far


def _skips(node, entity=None, found=None) -> dict[tuple[str, str], int]:
  """The highest running total of each entity's "skipped" entries, by
  gate, anywhere in Concordia's log."""
  found = {} if found is None else found
  if isinstance(node, dict):
    entity = node.get("entity_name", entity)
    if node.get("Key") == gate_tally.SKIPPED:
      key = (entity, node["Value"]["gate"])
      found[key] = max(found.get(key, 0), node["Value"]["total"])
    for value in node.values():
      _skips(value, entity, found)
  elif isinstance(node, list):
    for value in node:
      _skips(value, entity, found)
  return found


def test_each_skip_is_a_measurement_of_its_component(gated):
  """Concordia's log holds the component's "skipped" entries (count and
  running total), whose totals are gates.json's, agent by agent."""
  logged = _skips(json.loads((gated / "log.json").read_text()))
  counted = gates(gated)["agents"]
  assert logged and logged == {(agent, gate): n
                               for agent, by_gate in counted.items()
                               for gate, n in by_gate.items()}


def test_the_report_counts_what_it_did_not_judge(gated):
  assert cli.main(["report", str(gated)]) == 0
  page = (gated / "report" / "index.html").read_text()
  n = gates(gated)["totals"][gate_tally.RELEVANCE_FLOOR]
  said = "deed was" if n == 1 else "deeds were"
  assert (f"{n} {said} not judged against any held norm: below the "
          "embedder&#39;s relevance floor") in page


def test_the_counts_do_not_depend_on_thread_order(tmp_path, embedder,
                                                   gated, monkeypatch):
  """Two runs whose agents' detections and adjudications finish in
  opposite orders (each delayed by its actor's rank) count the same."""
  names = sorted(tr.TURNS)
  for run, order in (("forward", names), ("backward", names[::-1])):
    delay = {name: 0.02 * i for i, name in enumerate(order)}
    related, adjudicate = ConflictDetector.related, Referee.adjudicate

    def slow_related(self, events, norms, _real=related, _delay=delay):
      time.sleep(_delay.get(self.norm_memory.agent_name, 0.0))
      return _real(self, events, norms)

    def slow_adjudicate(self, actor, *args, _real=adjudicate, _delay=delay,
                        **kwargs):
      time.sleep(_delay.get(actor, 0.0))
      return _real(self, actor, *args, **kwargs)
    monkeypatch.setattr(ConflictDetector, "related", slow_related)
    monkeypatch.setattr(Referee, "adjudicate", slow_adjudicate)
    done = tr.run(tmp_path, embedder, name=run)
    monkeypatch.undo()
    assert gates(done) == gates(gated), run


def test_an_embedder_whose_texts_are_all_alike_skips_no_deed(tmp_path):
  """The bag-of-words embedder (every cosine about 0.3 or more) lets every
  deed through the relevance floor: the counts follow the embedder."""
  done = tr.run(tmp_path, bag_of_words)
  counted = gates(done)
  assert gate_tally.RELEVANCE_FLOOR not in counted["totals"]
  assert cli.main(["report", str(done)]) == 0
  page = (done / "report" / "index.html").read_text()
  assert "not judged against any held norm" not in page


def test_the_matchers_judge_floor_is_counted():
  model = ScriptedModel([(r".", {"answer": "no"})])
  matcher = NormMatcher(TARGETS, judge=LLMJudge(model))
  matcher.means_many(["Smoking is not permitted inside the cafe."])
  skipped = matcher.describe()["judge_skipped"]
  assert skipped >= 1  # Tipping: far below the floor, never asked.
  asked = len(model.calls)
  assert asked + skipped == len(TARGETS)
  lines = gate_lines({"totals": {}}, matcher.describe())
  assert lines == [f"{skipped} norm and target pair"
                   f"{' was' if skipped == 1 else 's were'} not put to the "
                   "matcher's judge: below the judge floor."]


def test_the_report_lines_say_when_nothing_was_counted():
  assert gate_lines(None, {})[0].startswith(
      "This run did not count what its similarity gates skipped")
  assert gate_lines({"totals": {}}, {}) == [
      "No similarity gate skipped anything in this run."]
  assert gate_lines({"totals": {gate_tally.DUPLICATE_PRECHECK: 1,
                                gate_tally.RELEVANCE_FLOOR: 3}}, {}) == [
      "3 deeds were not judged against any held norm: below the embedder's "
      "relevance floor (ConflictDetector).",
      "1 candidate norm was rejected as a duplicate without asking the "
      "model: at or above the embedder's duplicate threshold "
      "(ImmediateEvaluation)."]


def test_a_tally_is_a_sum_across_threads():
  tally, seen = gate_tally.GateTally(), []
  threads = [threading.Thread(target=lambda: [
      tally.add(gate_tally.TAG_FLOOR, 1, seen.append) for _ in range(200)])
             for _ in range(4)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert tally.counts() == {gate_tally.TAG_FLOOR: 800}
  assert len(seen) == 800 and seen[0]["Key"] == gate_tally.SKIPPED
  tally.add(gate_tally.TAG_FLOOR, 0)  # Nothing skipped: nothing said.
  assert len(seen) == 800
  assert NO_PORT.gate_counts() == {}


def test_a_resumed_run_counts_on_from_its_checkpoint(tmp_path, embedder,
                                                      monkeypatch):
  """The game master's counts too: a run crashed in slot 4 and resumed
  writes the gates.json of the run never interrupted."""
  monkeypatch.setitem(tr.TURNS, "Tom Gomez",
                      "Tom Gomez waters the plants by the window.")
  whole = tr.run(tmp_path / "whole", embedder)
  # Nothing near enough to Tom's deed for a second look, in slot 1 only
  # (he goes on with it): counted before the crash, kept by the checkpoint.
  assert gates(whole)["game_master"] == {gate_tally.LOOK_FLOOR: 1}
  crashed = tr._crashed_in_slot_4(  # pylint: disable=protected-access
      tmp_path / "crashed", embedder, monkeypatch)
  assert gates(crashed)["completed_steps"] == 3
  runner.resume_episode(crashed, model=tr.cafe(), embedder=embedder,
                        progress=False)
  assert gates(crashed) == gates(whole)



def test_the_referees_skips_go_to_its_logging_channel():
  """The referee (the game master's Adjudication passes its channel)
  shows each skip as it counts it."""
  seen: list[dict] = []
  judge = Referee(ScriptedModel([]), place="Tiny Cafe",
                  behaviours=tr.tiny().behaviours,
                  similarity=lambda a, b: 0.0, log=seen.append)
  fields, _ = judge.adjudicate("Tom Gomez", "Tom Gomez files his taxes.")
  assert fields["referee_asked"] is False  # Far from every behaviour.
  assert judge.gates.counts() == {gate_tally.SPARED_FAR_ACTION: 1}
  assert seen == [{"Key": gate_tally.SKIPPED,
                   "Summary": "skipped: 1 by spared_far_action",
                   "Value": {"gate": gate_tally.SPARED_FAR_ACTION,
                             "count": 1, "total": 1}}]
