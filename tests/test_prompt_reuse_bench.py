"""bench/prompt_reuse.py: measured and best-case prompt reuse per operation."""

import json

from bench import prompt_reuse


def _entry(tag: str, content: str, prompt_tokens: int, reused: int) -> dict:
  return {"n": 0, "at": 0.0, "tag": tag, "prompt_tokens": prompt_tokens,
          "reused_prompt_tokens": reused, "completion_tokens": 5,
          "seconds": 1.0, "answer": "",
          "messages": [{"role": "user", "content": content}]}


def test_best_prefix_is_the_longest_shared_with_any_earlier_prompt():
  texts = ["abcdef", "abcxyz", "zzz", "abcdeq"]
  assert prompt_reuse.best_prefixes(texts) == [
      (0, -1), (3, 0), (0, -1), (5, 0)]


def test_summary_sets_the_server_reuse_beside_the_best(tmp_path, capsys):
  stable = "persona and norms " * 5  # 90 characters shared.
  entries = [_entry("act", stable + "news one", 100, 0),
             _entry("act", stable + "news two", 100, 40),
             _entry("DetectConflict", "news first, " + stable, 50, 0)]
  rows = prompt_reuse.summarize(entries)
  assert rows["act"]["calls"] == 2 and rows["act"]["reused"] == 40
  # The second act prompt shares all but its last three characters.
  shared = len("<user>" + stable + "news ")
  total = len("<user>" + stable + "news two")
  assert abs(rows["act"]["best"] - 100 * shared / total) < 1e-9
  assert rows["DetectConflict"]["best"] < 5  # Its news comes first.
  log = tmp_path / "calls.jsonl"
  log.write_text("".join(json.dumps(e) + "\n" for e in entries))
  assert prompt_reuse.main([str(log), "--where", "1"]) == 0
  out = capsys.readouterr().out
  assert "prompt tokens reused: 16%" in out  # 40 of 250.
  assert "where prompts part" in out
  assert prompt_reuse.main([str(log), "--seen", "5"]) == 0
  assert "sent before anywhere (5+ characters):" in capsys.readouterr().out


def test_an_empty_or_missing_log_is_one_line_and_exit_2(tmp_path, capsys):
  empty = tmp_path / "calls.jsonl"
  empty.write_text("")
  assert prompt_reuse.main([str(empty)]) == 2
  assert prompt_reuse.main([str(tmp_path / "none.jsonl")]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 2 and all(line.startswith("prompt_reuse:") for line in err)


def test_a_request_the_server_already_held_whole_is_counted_as_resent():
  first = _entry("act", "a prompt", 100, 99)  # Its first sending timed out.
  again = _entry("act", "a prompt", 100, 99)  # A retry we sent: not resent.
  other = _entry("act", "another", 100, 0)
  assert prompt_reuse.resent([first, again, other]) == [first]


def test_chunk_reuse_adds_the_later_stretches_shared_with_the_best_match():
  window = "event two. event three. event four. "
  texts = ["persona. event one. " + window,
           "persona. " + window + "event five. "]
  analysed = (texts, prompt_reuse.best_prefixes(texts))
  shared = len("persona. event ")  # The prefix ends inside the window.
  later = "two. event three. event four. "  # The window's rest, reused.
  assert prompt_reuse.chunk_reuse(*analysed, min_chars=10) == [
      0, shared + len(later)]
  # Stretches shorter than the minimum are not reused.
  assert prompt_reuse.chunk_reuse(*analysed, min_chars=len(later) + 1) == [
      0, shared]
  entries = [_entry("act", t, 100, 0) for t in texts]
  chunks = prompt_reuse.chunk_reuse(*analysed, min_chars=10)
  rows = prompt_reuse.summarize(entries, analysed, chunks)
  assert rows["act"]["chunks"] > rows["act"]["best"]


def test_seen_before_counts_text_sent_earlier_in_any_place():
  # The slot's events come after the persona in one prompt and before
  # another persona in the next: no shared prefix, but the events were
  # sent before, and each persona is new.
  events = "the events everyone saw this slot. "
  texts = ["Ann likes tea. " + events, events + "Bob reads books. "]
  seen = prompt_reuse.seen_before(texts, min_chars=10)
  assert seen == [0, len(events)]
  assert prompt_reuse.best_prefixes(texts)[1][0] == 0
  entries = [_entry("act", t, 100, 0) for t in texts]
  rows = prompt_reuse.summarize(entries, (texts, prompt_reuse.best_prefixes(
      texts)), seen=seen)
  assert rows["act"]["seen"] == 100 * len(events) / len(texts[1])
  assert rows["act"]["best"] == 0
