"""Interventions in a scripted run: each happens as its slot opens.

The two rooms of tests/test_places_run.py (Abigail and Mei in the reading
room, Carlos and Tom in the games room), with Nora, who arrives at slot 3,
and five interventions: at slot 2 a sign in the games room and a norm
taught to Carlos; Nora arrives at 3; Tom leaves at 4; the games room
closes at 5. Every act prompt is kept, by agent and clock, to see who was
told what.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsec_concordia import runner
from crsec_concordia.scenarios import parse_scenario
from tests import test_places_run as rooms
from tests.machine_down import down_in_slot

ABIGAIL, MEI, CARLOS, TOM = rooms.ABIGAIL, rooms.MEI, rooms.CARLOS, rooms.TOM
NORA = "Nora Park"
SIGN = "A sign on the games room door reads: no smoking in the club."
TAUGHT = "Do not smoke in the club."
INTERVENTIONS = f"""interventions:
  - {{kind: announce, at: 2, text: "{SIGN}", places: [games_room]}}
  - {{kind: teach, at: "09:10", agents: [{CARLOS}],
      norm: {{content: {TAUGHT}, type: injunctive, utility: 80}}}}
  - {{kind: arrive, at: 3, agents: [{NORA}]}}
  - {{kind: leave, at: 4, agents: [{TOM}]}}
  - {{kind: close, at: 5, places: [games_room]}}
"""


def scenario_text() -> str:
  """ROOMS with Nora among the agents, and the interventions."""
  return rooms.ROOMS.replace(
      "behaviours:\n",
      f"  - {{name: {NORA}, role: ordinary, persona: A new member., "
      "home: reading_room}\nbehaviours:\n") + INTERVENTIONS


def model(prompts: dict[tuple[str, str], str]):
  """The rooms' scripted club (Mei stays); every act prompt kept by
  (agent, clock)."""
  def deed(name: str, clock: str, prompt: str) -> str:
    prompts[(name, clock)] = prompt
    if name == MEI:
      return ("Mei lights a cigarette in her armchair."
              if clock == "09:00" else "Mei joins in a round of whist.")
    return {ABIGAIL: "Abigail reads by the window.",
            CARLOS: "Carlos lights a cigarette at the card table.",
            NORA: "Nora hangs up her coat.",
            TOM: "Tom shuffles the deck."}[name]

  return rooms.acting_model(deed)


def run(out: Path, embedder, prompts=None) -> Path:
  return runner.run_episode(
      parse_scenario(scenario_text(), "intervened.yaml"), arm="normative",
      seed=1, out_dir=out, model=model({} if prompts is None else prompts),
      embedder=embedder, progress=False)


@pytest.fixture(scope="module")
def whole(tmp_path_factory, embedder):
  prompts: dict[tuple[str, str], str] = {}
  run_dir = run(tmp_path_factory.mktemp("whole") / "run", embedder, prompts)
  return run_dir, prompts


def test_each_intervention_is_a_record_of_its_slot(whole):
  run_dir, _ = whole
  recs = rooms.records(run_dir)
  done = [(r["step"], r["intervention"]) for r in recs
          if r["kind"] == "intervention"]
  assert done == [(2, "announce"), (2, "teach"), (3, "arrive"), (4, "leave"),
                  (5, "close")]
  # The game master's records of a slot come first, interventions first.
  for step in (2, 3, 4, 5):
    of_slot = [r for r in recs if r["step"] == step]
    assert of_slot[0]["kind"] == "intervention"


def test_an_announcement_reaches_exactly_the_agents_of_its_places(whole):
  run_dir, prompts = whole
  [sign] = [r for r in rooms.records(run_dir)
            if r.get("intervention") == "announce"]
  assert sign["agents"] == [CARLOS, TOM] and sign["text"] == SIGN
  for name in (CARLOS, TOM):
    assert SIGN in prompts[(name, "09:10")], name
  for name in (ABIGAIL, MEI):
    assert not any(SIGN in p for (who, _), p in prompts.items()
                   if who == name), name


def test_a_notice_is_read_for_a_norm_by_those_it_reached_in_its_slot(whole):
  run_dir, _ = whole
  read = [r for r in rooms.records(run_dir)
          if r["kind"] == "candidate" and r.get("origin") == "notice"]
  # The scripted IdentifyNorm finds its rule in any text; only Carlos and
  # Tom saw the sign, each reads it once, as the sign's slot is observed.
  assert sorted(r["agent"] for r in read) == [CARLOS, TOM]
  assert {r["step"] for r in read} == {2}
  assert {r["source_text"] for r in read} == {SIGN}
  assert all(r["source_agent"] is None for r in read)


def test_an_arriving_agent_acts_from_its_slot_and_a_leaving_one_never_again(
    whole):
  run_dir, prompts = whole
  steps = [r for r in rooms.records(run_dir) if r["kind"] == "step"]
  acting = {r["step"]: set(r["actors"]) for r in steps}
  assert [NORA in acting[s] for s in range(1, 7)] == [False, False] + [True] * 4
  assert [TOM in acting[s] for s in range(1, 7)] == [True] * 3 + [False] * 3
  assert not [k for k in prompts if k[0] == NORA and k[1] < "09:20"]
  assert not [k for k in prompts if k[0] == TOM and k[1] >= "09:30"]
  # Nobody perceived Nora before she came, nor Tom after he left.
  for r in rooms.records(run_dir):
    if r["kind"] == "action":
      assert r["actor"] != NORA or r["step"] >= 3
      assert r["actor"] != TOM or r["step"] < 4


def test_a_taught_norm_is_held_from_its_slot_and_acted_with(whole):
  run_dir, prompts = whole
  assert not [n for n in rooms.held(run_dir, 1)[CARLOS]
              if n["content"] == TAUGHT]
  [norm] = [n for n in rooms.held(run_dir, 2)[CARLOS] if n["content"] == TAUGHT]
  assert norm["origin"] == "taught" and not norm.get("committed")
  [taught] = [r for r in rooms.records(run_dir) if r["kind"] == "taught"]
  assert taught["agent"] == CARLOS and taught["step"] == 2
  # His act of that very slot sees it among his norms.
  assert TAUGHT in prompts[(CARLOS, "09:10")]
  assert TAUGHT not in prompts[(CARLOS, "09:00")]


def test_a_closed_place_is_left_and_stays_empty(whole):
  run_dir, _ = whole
  recs = rooms.records(run_dir)
  [closed] = [r for r in recs if r.get("intervention") == "close"]
  assert closed["moved"] == {CARLOS: "reading_room"}
  assert all(r["place"] != "games_room" for r in recs
             if r["kind"] == "action" and r["step"] >= 5)


def test_a_crash_after_an_intervention_resumes_with_identical_records(
    tmp_path, embedder, whole, monkeypatch):
  """The machine goes down in slot 4, after Tom left and before it ended:
  the resumed run records what the uninterrupted one did."""
  whole_dir, _ = whole
  with down_in_slot(monkeypatch, 4):
    run(tmp_path / "crashed", embedder)
  crashed = tmp_path / "crashed"
  runner.resume_episode(crashed, model=model({}), embedder=embedder,
                        progress=False)
  assert rooms.records(crashed) == rooms.records(whole_dir)
  for step in range(1, 7):
    assert rooms.held(crashed, step) == rooms.held(whole_dir, step)
  info = json.loads((crashed / "run.json").read_text())
  assert info["status"] == "completed"


def test_failures_counted_are_the_failures_that_happened(whole):
  """Nobody asked to act (Nora before she came, Tom after he left) has a
  failure record: the records, and the run's summary of them, count the
  calls that failed (the usage meter's), each of an agent there."""
  run_dir, _ = whole
  recs = rooms.records(run_dir)
  present = {r["step"]: set(r["actors"]) for r in recs if r["kind"] == "step"}
  failures = [r for r in recs if r["kind"] == "failure"]
  assert all(r["agent"] in present[r["step"]] for r in failures), failures
  usage = json.loads((run_dir / "usage.json").read_text())
  failed_calls = sum(t["failed_calls"] for t in usage["by_tag"].values())
  assert failed_calls > 0  # The scripted plans fail: there is something to count.
  assert len(failures) == failed_calls
  assert runner.summarize(run_dir)["records"]["failure"] == failed_calls


def test_a_departed_agent_is_not_interviewed_after_it_left(whole, tmp_path):
  from crsec_concordia.interviews.interview import interview  # pylint: disable=import-outside-toplevel
  from tests.test_interviews import answering  # pylint: disable=import-outside-toplevel
  run_dir, _ = whole
  asked = {}
  for step in (5, 6):  # The checkpoints a run keeps; Tom left at 4.
    result = interview(run_dir, "rules", at=step, model=answering(),
                       out=tmp_path / f"at_{step}.csv")
    asked[step] = set(result.answers["agent"])
  assert asked[5] == asked[6] == {ABIGAIL, MEI, CARLOS, NORA}


def test_an_announce_indoors_reaches_the_agents_of_a_file_without_places(
    tmp_path, embedder):
  """`indoors` names the implicit place of a scenario that declares none:
  the notice reaches everyone there (all start indoors)."""
  from tests.test_interventions import NO_PLACES  # pylint: disable=import-outside-toplevel
  from tests.test_runner import cafe  # pylint: disable=import-outside-toplevel
  text = NO_PLACES + ('  - {kind: announce, at: 2, text: "A sign: speak '
                      'softly.", places: [indoors]}\n')
  run_dir = runner.run_episode(
      parse_scenario(text, "plain.yaml"), arm="baseline", seed=1,
      out_dir=tmp_path / "run", model=cafe(), embedder=embedder,
      steps=2, progress=False)
  [notice] = [r for r in rooms.records(run_dir)
              if r["kind"] == "intervention"]
  assert notice["places"] == ["indoors"]
  assert notice["agents"] == ["Ann Lee", "Bo Chen"]
