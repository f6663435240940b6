"""bench/cache_reuse.py: a run's requests replayed, reuse per operation."""

from bench import cache_reuse
from tests.fake_openai import FakeOpenAI, Reply, completion


def _entry(tag: str, content: str) -> dict:
  return {"n": 0, "at": 0.0, "tag": tag, "prompt_tokens": 0,
          "reused_prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0,
          "answer": "", "messages": [{"role": "user", "content": content}]}


def test_the_replay_sends_the_logged_prompts_in_order_for_one_token():
  fake = FakeOpenAI().start()
  try:
    def answer(request):
      # A server that reused 30 of every 100 prompt tokens.
      body = completion(Reply(prompt_tokens=100, completion_tokens=1), "m")
      body["usage"]["prompt_tokens_details"] = {"cached_tokens": 30}
      return Reply(body=body)
    fake.responder = answer
    entries = [_entry("act", f"prompt {i}") for i in range(5)]
    entries.append(_entry("Reflect", "what was seen"))
    results, seconds = cache_reuse.replay(fake.base_url, entries, jobs=1)
  finally:
    fake.stop()
  sent = [r.body for r in fake.chat_requests()]
  assert [b["messages"][0]["content"] for b in sent] == [
      e["messages"][0]["content"] for e in entries]
  assert all(b["max_tokens"] == 1 and b["temperature"] == 0.0 for b in sent)
  assert results == [("act", 100, 30)] * 5 + [("Reflect", 100, 30)]
  assert seconds >= 0.0


def test_the_table_sets_each_setting_beside_the_others():
  passes = {0: ([("act", 100, 10), ("act", 100, 30), ("Reflect", 50, 0)],
                12.0),
            256: ([("act", 100, 70), ("act", 100, 90), ("Reflect", 50, 25)],
                  9.0)}
  lines = cache_reuse.table(passes)
  assert "reuse 0" in lines[0] and "reuse 256" in lines[0]
  act = next(line for line in lines if line.startswith("act"))
  assert act.split()[1:] == ["2", "200", "20%", "80%"]
  reflect = next(line for line in lines if line.startswith("Reflect"))
  assert reflect.split()[1:] == ["1", "50", "0%", "50%"]
  total = next(line for line in lines if line.startswith("all"))
  assert total.split()[1:] == ["3", "250", "16%", "74%"]
  assert lines[-1].split()[-2:] == ["12", "9"]
