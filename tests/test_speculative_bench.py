"""bench/speculative.py: a run's answers replayed as written, drafting compared."""

import pytest

from bench import speculative
from crsec_concordia.models import embedded
from tests.fake_openai import FakeOpenAI, Reply, completion


def _entry(tag: str, content: str, answer: str) -> dict:
  return {"n": 0, "at": 0.0, "tag": tag, "prompt_tokens": 0,
          "reused_prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0,
          "answer": answer, "messages": [{"role": "user", "content": content}]}


def test_the_grammar_allows_the_logged_answer_alone_with_its_escapes():
  grammar = speculative.literal_grammar('{"a": "say \\"hi\\"\n\tnow"}')
  assert grammar == ('root ::= "{\\"a\\": \\"say \\\\\\"hi\\\\\\"\\n\\tnow'
                     '\\"}"')


def test_the_replay_holds_each_request_to_its_logged_answer_in_order():
  fake = FakeOpenAI().start()
  try:
    def answer(request):
      # A server that drafted 10 tokens and kept 4 of each answer, and
      # wrote the second answer otherwise than logged.
      text = request.body["messages"][0]["content"]
      reply = Reply(content="{}" if text == "p1" else '{"v": 1}',
                    completion_tokens=6)
      body = completion(reply, "m")
      body["timings"] = {"draft_n": 10, "draft_n_accepted": 4}
      return Reply(body=body)
    fake.responder = answer
    entries = [_entry("DetectConflict", f"p{i}", '{"v": 1}')
               for i in range(3)]
    rows, seconds = speculative.replay(fake.base_url, entries, jobs=1)
  finally:
    fake.stop()
  sent = [r.body for r in fake.chat_requests()]
  assert [b["messages"][0]["content"] for b in sent] == ["p0", "p1", "p2"]
  assert all(b["temperature"] == 0.0 and b["grammar"] ==
             speculative.literal_grammar('{"v": 1}') for b in sent)
  assert rows == [("DetectConflict", 6, 10, 4, True),
                  ("DetectConflict", 6, 10, 4, False),
                  ("DetectConflict", 6, 10, 4, True)]
  assert seconds >= 0.0


def test_the_table_sets_each_drafting_beside_no_drafting():
  passes = {"none": ([("act", 30, 0, 0, True), ("Talk", 10, 0, 0, True)],
                     20.0),
            "ngram-mod": ([("act", 30, 40, 12, True),
                           ("Talk", 10, 8, 2, True)], 25.0)}
  lines = speculative.table(passes)
  assert "ngram-mod drafted/accepted" in lines[0]
  act = next(line for line in lines if line.startswith("act"))
  assert act.split()[1:] == ["1", "30", "40/12"]
  assert lines[-1].split()[-4:] == ["20", "(1.00)", "25", "(1.25)"]


def test_a_speculative_type_is_named_as_llama_cpp_names_it_or_refused():
  xllamacpp = pytest.importorskip("xllamacpp")
  assert embedded.speculative_types(xllamacpp, ["ngram-mod"]) == [
      xllamacpp.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_MOD]
  with pytest.raises(ValueError, match="use one of .*ngram-simple"):
    embedded.speculative_types(xllamacpp, ["draft-simple"])


def test_an_unknown_setting_is_refused_before_any_server_starts(capsys,
                                                                tmp_path):
  pytest.importorskip("xllamacpp")
  log = tmp_path / "calls.jsonl"
  log.write_text('{"tag": "act", "answer": "x", "messages": []}\n')
  assert speculative.main([str(log), "--settings", "none", "ngram"]) == 2
  assert "unknown speculative type ngram" in capsys.readouterr().err
