"""The run's progress bar moves as calls return, the first slot included.

A scripted 10-agent run of the café (the built-in scenario, one slot): a
fake bar takes the place of tqdm and keeps every postfix it is shown and
when the slot ends (`update`). Before the first slot's end it must have
been shown call and token counts that grow, as the calls of the
entrepreneurs' initial norms and the day plans returned.
"""

from __future__ import annotations

import re

from crsec_concordia import runner
from crsec_concordia.runs import progress
from tests.test_runner import cafe

_COUNTS = re.compile(r"slot (\d+): (\d+) calls, (\d+) tokens, last (\S+)")


class FakeBar:
  """Records what a tqdm bar would show, in order."""

  def __init__(self, *, total, initial, **kwargs):
    del kwargs
    self.total, self.n = total, initial
    self.events: list[tuple[str, object]] = []

  def set_postfix_str(self, text, refresh=True):
    del refresh
    self.events.append(("postfix", text))

  def update(self, n=1):
    self.n += n
    self.events.append(("update", n))

  def close(self):
    self.events.append(("close", None))


def test_the_first_slot_shows_calls_and_tokens_as_they_return(
    tmp_path, embedder, monkeypatch):
  bars: list[FakeBar] = []

  def fake_tqdm(**kwargs):
    bars.append(FakeBar(**kwargs))
    return bars[-1]

  monkeypatch.setattr(progress, "tqdm", fake_tqdm)
  monkeypatch.setattr(progress, "MIN_INTERVAL", 0.0)
  runner.run_episode("hobbs_cafe", arm="normative", seed=1, steps=1,
                     out_dir=tmp_path / "run", model=cafe(), embedder=embedder,
                     progress=True)
  [bar] = bars
  first_end = bar.events.index(("update", 1))
  shown = [_COUNTS.search(str(text)) for kind, text in bar.events[:first_end]
           if kind == "postfix"]
  counts = [(int(m[2]), int(m[3])) for m in shown if m]
  assert len(counts) >= 10, bar.events[:first_end]
  assert all(m[1] == "1" for m in shown if m)
  calls = [c for c, _ in counts]
  tokens = [t for _, t in counts]
  assert calls == sorted(calls) and calls[0] < calls[-1]
  assert tokens == sorted(tokens) and tokens[0] < tokens[-1]
  tags = {m[4] for m in shown if m}
  assert "CreateNorm" in tags or any("Plan" in t for t in tags), tags


LONG_COMMANDS = ("run", "resume", "compare", "sweep", "report", "calibrate",
                 "interview")


def test_every_long_command_takes_the_same_progress_flag():
  """--no-progress is one flag (commands/flags.py), with one help, on
  every command that runs for long."""
  import argparse  # pylint: disable=import-outside-toplevel
  from crsec_concordia import cli  # pylint: disable=import-outside-toplevel
  parser = cli.build_parser()
  [sub] = [a for a in parser._actions  # pylint: disable=protected-access
           if isinstance(a, argparse._SubParsersAction)]  # pylint: disable=protected-access
  helps = set()
  for name in LONG_COMMANDS:
    [flag] = [a for a in sub.choices[name]._actions  # pylint: disable=protected-access
              if "--no-progress" in a.option_strings]
    assert flag.default is False and flag.const is True, name
    helps.add(flag.help)
  assert len(helps) == 1


def test_a_sweep_without_progress_draws_no_line_but_says_what_happened():
  import io  # pylint: disable=import-outside-toplevel
  from crsec_concordia.sweeps.progress import Progress  # pylint: disable=import-outside-toplevel
  stream = io.StringIO()
  line = Progress(3, stream=stream, quiet=0.0, shown=False)
  line.show(force=True)
  assert stream.getvalue() == ""
  line.say("sweep: run 1 done")
  assert stream.getvalue() == "sweep: run 1 done\n"
