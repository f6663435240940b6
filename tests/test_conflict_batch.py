"""DetectConflict's questions of one place's slot asked together.

With the agents' `conflicts_batched` param, the distinct questions (deed,
rule) of one place in one slot, across every observer there, go in one
call (operations/detect_conflict_batch.py, gathered by
detect_conflict_sharing.py), cut by the request budget; each holder reads
the verdicts of its own questions. Checked on the scripted room of
tests/test_shared_judgement.py and on the sharing service directly: one
call per place-slot batch, a breach quoted from another question's deed
is no breach, an invalid answer is asked once more and then recorded per
question, the budget's cut, and the same records whatever the threads'
order. With the param absent, runs are as before (the golden replay and
tests/test_shared_judgement.py).
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Callable

import pytest

from crsec_concordia.models.base import StructuredOutputError
from crsec_concordia.models.request_budget import CHARS_PER_PROMPT_TOKEN
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations import detect_conflict_batch as batch_lib
from crsec_concordia.operations.detect_conflict import OP, Observed
from crsec_concordia.operations.detect_conflict_sharing import SharedJudgements
from crsec_concordia.prefabs import params as params_lib
from crsec_concordia.runs import config as config_lib
from tests import crsec_script as cs
from tests import test_shared_judgement as room

BATCHED = r"Each question below has an id"
PER_QUESTION_PARAMS = config_lib.entity_params
_QUESTION = re.compile(r'^\[(q\d+)\] (.+?) \((.*?)\): "(.*)"$', re.M)


def questions_of(prompt: str) -> dict[str, tuple[str, str, str]]:
  """{id: (actor, deed, rule)} of a batched prompt."""
  found = {}
  for m in _QUESTION.finditer(prompt):
    rule = prompt[m.end():].split("Rule: ", 1)[1].split("\n", 1)[0]
    found[m[1]] = (m[2], m[4], rule)
  return found


def batch_judge(prompt: str, schema: dict) -> dict:
  """room.judge's verdicts, by question id: a lit cigarette breaks a rule
  about smoking, quoting the deed's words."""
  out = {}
  for key, (_, deed, rule) in questions_of(prompt).items():
    smoking = "cigarette" in deed and "smok" in rule.lower()
    out[key] = ({"evidence": "lights a cigarette", "verdict": "breaks"}
                if smoking else {"evidence": "none", "verdict": "unrelated"})
  assert list(out) == list(schema["properties"])
  return out


def batched_model(delays: random.Random | None = None):
  scripted = room.model(delays)
  scripted.add_rule(BATCHED, batch_judge, first=True)
  return scripted


@pytest.fixture
def batched_params(monkeypatch):
  """Every agent built with conflicts_batched on."""
  original = config_lib.entity_params

  def with_switch(scenario, name):
    return {**original(scenario, name), params_lib.CONFLICTS_BATCHED: True}
  monkeypatch.setattr(config_lib, "entity_params", with_switch)


@pytest.fixture
def batched_run(tmp_path, embedder, batched_params):
  scripted = batched_model()
  return room.play(tmp_path, embedder, "batched", scripted), scripted


def test_one_call_per_place_slot_and_the_records_of_per_question(
    batched_run, tmp_path, embedder, monkeypatch):
  run_dir, scripted = batched_run
  calls = [c for c in scripted.calls if c.tag == OP]
  assert calls and all(re.search(BATCHED, c.prompt) for c in calls)
  # One place: one call a slot at most, each question in it once.
  assert len(calls) <= 3
  for call in calls:
    asked = list(questions_of(call.prompt).values())
    assert len(asked) == len(set(asked)) == len(call.schema["properties"])
  # The smoker's question is in a call every slot it is asked, and every
  # holder records its own conflict, as when each question is its own.
  monkeypatch.setattr(config_lib, "entity_params", PER_QUESTION_PARAMS)
  per_question = room.play(tmp_path, embedder, "alone", room.model())
  for kind in ("conflict", "talk_decision", "conversation", "action"):
    assert (room.records(run_dir, kind)
            == room.records(per_question, kind)), kind
  assert room.records(run_dir, "conflict")
  # The switch is in the agents' params: a resumed run keeps it; absent,
  # config.json is as it was.
  assert '"conflicts_batched": true' in (run_dir / "config.json").read_text(
      encoding="utf-8")
  assert "conflicts_batched" not in (per_question / "config.json").read_text(
      encoding="utf-8")


def test_a_thread_delayed_batched_run_is_the_same_byte_for_byte(
    batched_run, tmp_path, embedder, batched_params):
  run_dir, _ = batched_run
  delayed = room.play(tmp_path, embedder, "delayed",
                      batched_model(delays=random.Random(5)))
  for name in ("events.jsonl", "usage.json"):
    assert ((delayed / name).read_text(encoding="utf-8")
            == (run_dir / name).read_text(encoding="utf-8")), name


def _item(actor: str, norm: str, holder: str, place: str = "indoors",
          deed: str = "lights a cigarette.") -> Observed:
  return Observed(actor, f"{actor} {deed}", place,
                  PersonalNorm(id=f"{holder}-1", content=norm, utility=90,
                               type="injunctive"))


def _slot(asked: dict[str, list[Observed]], model, order: list[str],
          budget: int = batch_lib.CONTEXT_TOKENS,
          sinks: dict[str, Callable] | None = None,
          alone: frozenset[str] = frozenset()) -> dict[str, list]:
  """The holders' answers, each holder in a thread of its own, started in
  `order`; those in `alone` hand theirs in without the switch."""
  names = sorted(asked)
  shared = SharedJudgements(names, budget=budget)
  shared.open_slot(names)
  tickets = {n: shared.enter(n) for n in names}
  answers: dict[str, list] = {}

  def holder(name: str) -> None:
    sink = (sinks or {}).get(name, lambda failure: None)
    answers[name] = shared.judge(tickets[name], asked[name],
                                 model.tagged(OP), sink,
                                 batched=name not in alone)
  workers = [threading.Thread(target=holder, args=(n,)) for n in order]
  for w in workers:
    w.start()
  for n in reversed(order):
    shared.observed(n)
  for w in workers:
    w.join()
  return answers


ASKED = {
    "Ann": [_item("Carlos", "No smoking indoors.", "Ann"),
            _item("Tom", "No smoking indoors.", "Ann", deed="reads.")],
    "Bob": [_item("Carlos", "No smoking indoors.", "Bob"),
            _item("Dee", "Tip after meals.", "Bob", deed="tips well.")],
    "Cy": [_item("Eve", "No smoking indoors.", "Cy", place="terrace")],
    "Dee": [_item("Carlos", "No smoking indoors.", "Dee"),
            _item("Fay", "Tip after meals.", "Dee", deed="leaves no tip.")],
}


def _model():
  scripted = cs.cafe_model()
  scripted.add_rule(BATCHED, batch_judge, first=True)
  return scripted


def test_a_place_s_distinct_questions_in_one_call_each_holder_its_own():
  scripted = _model()
  answers = _slot(ASKED, scripted, sorted(ASKED))
  calls = [c for c in scripted.calls if c.tag == OP]
  # Two places: two calls, no observer named, each question once.
  assert len(calls) == 2
  assert all(c.prompt.startswith("Some people hold rules") for c in calls)
  indoors, = [questions_of(c.prompt) for c in calls
              if "(indoors)" in c.prompt]
  assert sorted(a for a, _, _ in indoors.values()) == [
      "Carlos", "Dee", "Fay", "Tom"]
  assert answers["Ann"] == [(True, "lights a cigarette"), (False, "none")]
  assert answers["Bob"][0] == answers["Dee"][0] == answers["Ann"][0]
  assert answers["Cy"] == [(True, "lights a cigarette")]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_calls_and_answers_do_not_depend_on_thread_order(seed):
  first = _model()
  expected = _slot(ASKED, first, sorted(ASKED))
  order = sorted(ASKED)
  random.Random(seed).shuffle(order)
  other = _model()
  assert _slot(ASKED, other, order) == expected
  assert (sorted(c.prompt for c in other.calls)
          == sorted(c.prompt for c in first.calls))


def test_a_breach_quoting_another_question_s_deed_is_no_breach():
  def neighbour(prompt, schema):
    asked = questions_of(prompt)
    ids = list(asked)
    # Every verdict a breach, each quoting the NEXT question's deed.
    return {k: {"evidence": asked[ids[(n + 1) % len(ids)]][1],
                "verdict": "breaks"} for n, k in enumerate(ids)}
  scripted = cs.cafe_model()
  scripted.add_rule(BATCHED, neighbour, first=True)
  items = [_item("Carlos", "No smoking indoors.", "Ann"),
           _item("Tom", "No smoking indoors.", "Ann",
                 deed="hums a song by the door.")]
  judged = batch_lib.detect_conflicts_batched(scripted, items, None)
  assert [j.breaks for j in judged] == [False, False]
  # Its own words, or "none" with a breach, as one question is judged.
  assert batch_lib.quoted("Carlos lights a cigarette", items[0])
  assert not batch_lib.quoted("none", items[0])


def test_an_invalid_answer_is_asked_again_then_recorded_per_question():
  tries = []

  def twice_bad(prompt, schema):
    tries.append(prompt)
    raise StructuredOutputError("no valid answer", raw="{", attempts=1)
  scripted = cs.cafe_model()
  scripted.add_rule(BATCHED, twice_bad, first=True)
  failures: dict[str, list] = {n: [] for n in ASKED}
  answers = _slot(ASKED, scripted, sorted(ASKED),
                  sinks={n: failures[n].append for n in ASKED})
  # Two calls (two places), each asked twice.
  assert len(tries) == 4
  # Never filled in: no answer for any question.
  assert all(a is None for got in answers.values() for a in got)
  # One failure per question, in its first holder's journal by name.
  recorded = [(n, f["actor"], f["norm"], f["holders"])
              for n, got in failures.items() for f in got]
  assert sorted(recorded) == sorted([
      ("Ann", "Carlos", "No smoking indoors.", ["Ann", "Bob", "Dee"]),
      ("Ann", "Tom", "No smoking indoors.", ["Ann"]),
      ("Bob", "Dee", "Tip after meals.", ["Bob"]),
      ("Cy", "Eve", "No smoking indoors.", ["Cy"]),
      ("Dee", "Fay", "Tip after meals.", ["Dee"])])
  assert all(f["op"] == OP and f["question"].startswith("q")
             for got in failures.values() for f in got)


def test_an_answer_valid_the_second_time_is_kept():
  tries = []

  def once_bad(prompt, schema):
    tries.append(prompt)
    if len(tries) == 1:
      raise StructuredOutputError("cut short", raw="{", attempts=1)
    return batch_judge(prompt, schema)
  scripted = cs.cafe_model()
  scripted.add_rule(BATCHED, once_bad, first=True)
  items = ASKED["Ann"]
  failures = []
  judged = batch_lib.detect_conflicts_batched(
      scripted, items, lambda k, f: failures.append(k))
  assert len(tries) == 2 and not failures
  assert [j.breaks for j in judged] == [True, False]


def test_a_crowded_place_is_cut_to_the_budget_in_a_fixed_order():
  crowd = {f"H{n:02d}": [_item(f"Actor {n:02d}", "No smoking indoors.",
                               f"H{n:02d}")] for n in range(12)}
  one = batch_lib.tokens([crowd["H00"][0]])
  budget = batch_lib.tokens([crowd["H00"][0], crowd["H01"][0],
                             crowd["H02"][0]])
  assert one < budget
  scripted = _model()
  order = sorted(crowd, reverse=True)
  answers = _slot(crowd, scripted, order, budget=budget)
  calls = [c for c in scripted.calls if c.tag == OP]
  sizes = [len(c.schema["properties"]) for c in calls]
  assert sum(sizes) == 12 and max(sizes) == 3 and len(calls) == 4
  asked = sorted(a for c in calls for a, _, _ in
                 questions_of(c.prompt).values())
  assert asked == sorted(f"Actor {n:02d}" for n in range(12))
  # In question order: each call's actors follow on from the last's.
  firsts = sorted(min(a for a, _, _ in questions_of(c.prompt).values())
                  for c in calls)
  assert firsts == ["Actor 00", "Actor 03", "Actor 06", "Actor 09"]
  assert all(a == [(True, "lights a cigarette")] for a in answers.values())


def test_a_batch_is_counted_as_a_request_must_fit():
  """Counted as an interview's memories are (erring high: fewer characters
  a token than any logged request took), not at four characters a token,
  which a batch near the context could pass and the server refuse."""
  items = [_item(f"Actor {n}", "No smoking indoors.", "H") for n in range(5)]
  shown = len(batch_lib.prompt(items))
  assert batch_lib.tokens(items) >= (shown / CHARS_PER_PROMPT_TOKEN
                                     + batch_lib.answer_tokens(len(items)))


def test_split_keeps_each_batch_within_the_budget():
  items = [_item(f"Actor {n}", "No smoking indoors.", "H") for n in range(9)]
  budget = batch_lib.tokens(items[:4])
  batches = batch_lib.questions_in_calls(items, budget)
  assert [i for b in batches for i in b] == items
  assert all(batch_lib.tokens(b) <= budget for b in batches)
  # An item too large alone is a call of its own.
  assert batch_lib.questions_in_calls(items[:1], 1) == [items[:1]]


def test_the_param_is_true_or_false():
  with pytest.raises(ValueError, match="conflicts_batched 'yes': true or "
                     "false"):
    params_lib.check("normative__Entity",
                     {params_lib.CONFLICTS_BATCHED: "yes"})
  params_lib.check("normative__Entity", {params_lib.CONFLICTS_BATCHED: True})


def test_a_holder_without_the_switch_asks_the_rest_as_before():
  """Bob shares the smoker's question with Ann, who batches: it is asked
  in her place's batch; his other question he asks as he would alone."""
  asked = {"Ann": [_item("Carlos", "No smoking indoors.", "Ann")],
           "Bob": [_item("Carlos", "No smoking indoors.", "Bob"),
                   _item("Tom", "Tip after meals.", "Bob", deed="tips.")]}
  scripted = _model()
  answers = _slot(asked, scripted, ["Bob", "Ann"], alone=frozenset({"Bob"}))
  prompts = sorted(c.prompt for c in scripted.calls if c.tag == OP)
  assert len(prompts) == 2
  batched, = [p for p in prompts if re.search(BATCHED, p)]
  assert [a for a, _, _ in questions_of(batched).values()] == ["Carlos"]
  alone, = [p for p in prompts if p.startswith("Bob holds some rules")]
  assert "Tom (indoors)" in alone and "Carlos" not in alone
  assert answers["Bob"][0] == answers["Ann"][0] == (True,
                                                    "lights a cigarette")
