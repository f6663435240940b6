"""bench/script_grammar.py: a run's structured requests asked again, with
and without the prompt's scripts held in the grammar."""

import json

from bench import script_grammar
from tests.fake_openai import FakeOpenAI, Reply

SCHEMA = {"type": "object", "required": ["quote"],
          "properties": {"quote": {"type": "string"}}}


def _entry(content: str, answer: str) -> dict:
  return {"tag": "DetectConflict", "answer": answer,
          "messages": [{"role": "system", "content": "Answer in JSON."},
                       {"role": "user", "content": content}],
          "asked": {"seed": 11, "temperature": 0.2, "top_p": 0.95,
                    "max_tokens": 64, "schema": SCHEMA}}


def test_each_request_is_asked_once_as_logged_and_judged():
  fake = FakeOpenAI().start()
  try:
    answers = {"p0": '{"quote": "the noise"}', "p1": '{"quote": "the 噪声"}',
               "p2": '{"quote": 3}'}
    fake.responder = lambda request: Reply(
        answers[request.body["messages"][-1]["content"]],
        completion_tokens=5)
    entries = [_entry(f"p{i}", '{"quote": "the noise"}') for i in range(3)]
    for confine in (False, True):
      outcomes = [script_grammar.ask(fake.base_url, e, confine)
                  for e in entries]
      assert [(o.verdict, o.same, o.written) for o in outcomes] == [
          ("ok", True, 5), ("letters", False, 5), ("schema", False, 5)]
  finally:
    fake.stop()
  sent = [r.body for r in fake.chat_requests()]
  # One request each, no retry, with the logged seed and temperature; the
  # rule in the grammar only in the second pass.
  assert len(sent) == 6
  assert all(b["seed"] == 11 and b["temperature"] == 0.2 for b in sent)
  assert [r"\P{L}" in b["grammar"] for b in sent] == [False] * 3 + [True] * 3


def test_the_table_sets_the_passes_side_by_side():
  out = script_grammar.Outcome
  passes = {"as logged": ([out("act", "letters", False, 9),
                           out("act", "ok", True, 7)], 10.0),
            "scripts in the grammar": ([out("act", "ok", False, 8),
                                        out("act", "ok", True, 7)], 11.0)}
  lines = script_grammar.table(passes)
  act = next(line for line in lines if line.startswith("act"))
  assert act.split() == ["act", "2", "1/0/1/16", "0/0/1/15"]
  assert lines[-1].split()[-4:] == ["10", "(1.00)", "11", "(1.10)"]


def test_a_log_without_how_requests_were_asked_is_refused(capsys, tmp_path):
  log = tmp_path / "calls.jsonl"
  log.write_text(json.dumps({"tag": "act", "answer": "x", "messages": []})
                 + "\n")
  assert script_grammar.main([str(log)]) == 2
  assert "written by this version" in capsys.readouterr().err
