"""Prompt tokens per agent-hour, by operation and by prompt section.

Plays a café (default: the mini café, its five slots; `--scenario
hobbs_cafe --steps N` for the full one) on the scripted café model
(tests/crsec_script.py: the real CRSEC prefabs and game master, scripted
answers, the real sentence embedder; the stated-belief questions, no part
of a run's cost per agent-hour, are not asked), keeps every prompt an operation
sends, and prints per operation: calls per agent-hour, mean and largest
prompt tokens (characters / 4, the project's estimate, with the system
line a server is sent beside every JSON call), the completion cap each
call asks for (max_tokens), and the mean prompt split into its sections
(persona, norms, plan, events, the answer's fields described in prose,
other instructions), so the largest sinks show. No language model runs.

With `--replay`, it reads the golden recording's own prompts instead (the
mini café on the embedded model, replayed from tests/golden/: real
answers, so real events and memories), as long as no prompt changed since
it was recorded. With `--golden`, it also reads the golden recording of the embedded model
(tests/golden/mini_cafe/responses.sqlite) and sets each operation's cap
beside the completion tokens its recorded answers took (matched to the
operation by the keys of their JSON): how far above its answers a cap is.

  .venv/bin/python bench/prompt_budget.py --golden
  .venv/bin/python bench/prompt_budget.py --replay   # the recorded prompts
  .venv/bin/python bench/prompt_budget.py --scenario hobbs_cafe --steps 12

The scripted answers are short and alike, so the events and memories in
these prompts are shorter than a real model's: the fixed parts
(instructions, fields, persona, norms) are measured, the growing parts
are a lower bound.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import re
import sqlite3
import statistics
import sys
import shutil
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crsec_concordia import runner  # noqa: E402
from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.models import ScriptedModel, base  # noqa: E402
from crsec_concordia.models import openai_compatible  # noqa: E402
from crsec_concordia.models.scripted import Call  # noqa: E402
from crsec_concordia.operations.names import STATED_BELIEF  # noqa: E402
from crsec_concordia.scenarios import load_scenario  # noqa: E402
from crsec_concordia.testing import plainest  # noqa: E402
from tests import crsec_script as cs  # noqa: E402
from tests.test_game_master import referee  # noqa: E402

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden" / (
    "mini_cafe") / "responses.sqlite"
# What a server is sent beside every JSON call's prompt.
SYSTEM = openai_compatible._JSON_SYSTEM  # pylint: disable=protected-access
SECTIONS = ("persona", "norms", "plan", "events", "fields", "instructions")
# Deeds the scripted agents take turns at, each breaking or keeping one of
# the café's behaviours, so conflicts, talk and norms happen.
# Four words at most: an act that copies another agent's action is asked
# again (components/_copies.py), and shorter ones never count as copies.
DEEDS = ("lights a cigarette indoors.", "shouts across the room.",
         "leaves no tip.", "reads quietly.", "leaves a tip.",
         "smokes on the terrace.")
_ASKED = re.compile(r"What does (.+?) do (?:next|about)")
_CLOCK = re.compile(r"\d\d:\d\d")
_NORM = re.compile(r"^\d+\. .*(?:importance|\(\w+\)$|\d+/100\)$)")
_EVENT = re.compile(r'^(?:Day \d+ \d\d:\d\d|\[|\d\d:\d\d(?:, [\w ]+)?:$|\d+\. [A-Z][\w .\'-]+'
                    r" \(|[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,3}(?: \([^)]*\))?: |Conversation between"
                    r'|Source:|Statement:)|saw this|(?:has|had) just|now holds'
                    r"|^(?:[A-Z][\w'-]* ){1,4}\([a-z][\w, ]*\) "
                    r'|Going on as before|seen others do')
# The headings of lists of events.
_LISTS = re.compile(r"^Recent events|seen others do|^Conversation so far")
_PLAN = re.compile(r"^\d\d:\d\d-\d\d:\d\d: |task now|^Plan for today")


def deed(name: str, prompt: str) -> str:
  """One agent's deed for the slot its prompt names."""
  clock = (_CLOCK.findall(prompt) or ["00:00"])[-1]
  pick = int(hashlib.sha256(f"{name}{clock}".encode()).hexdigest(), 16)
  return f"{name} {DEEDS[pick % len(DEEDS)]}"


class BudgetModel(ScriptedModel):
  """The scripted café, keeping each JSON call's cap beside its prompt."""

  def __init__(self):
    super().__init__()
    self.caps: dict[str, list[int]] = collections.defaultdict(list)
    template = cs.cafe_model()
    self._rules = list(template._rules)  # pylint: disable=protected-access

    def act(prompt: str, schema: Mapping[str, Any]) -> dict[str, str]:
      asked = _ASKED.search(prompt)
      text = (deed(asked.group(1), prompt) if asked else
              "Please think of the others in the room.")
      out = {"answer": text}
      if "next" in schema["properties"]:
        out["next"] = text
      return out
    self.add_rule(cs.ACT, act, first=True)
    def judge(prompt: str, schema: Mapping[str, Any]) -> dict[str, Any]:
      # The tests' referee answers the general call; an occasion's call
      # asks for fewer keys, the plainest value where the referee has none.
      said = referee(prompt)
      out = {k: said.get(k, plainest(v))
             for k, v in schema["properties"].items()}
      for key, value in out.items():
        if value not in schema["properties"][key].get("enum", [value]):
          out[key] = schema["properties"][key]["enum"][-1]  # "none".
      return out
    self.add_rule(r"You are the referee", judge, first=True)
    self.add_rule(cs.LOOK, cs.look_none, first=True)

  def sample_json(self, prompt: str, schema: base.JsonSchema, *,
                  max_tokens: int = 512, temperature: float = 0.2,
                  seed: int | None = None, tag: str = base.DEFAULT_TAG
                  ) -> dict[str, Any]:
    with self._lock:
      self.caps[tag].append(max_tokens)
    return super().sample_json(prompt, schema, max_tokens=max_tokens,
                               temperature=temperature, seed=seed, tag=tag)


def tokens(text: str) -> float:
  return len(text) / 4


def schema_keys(schema: Mapping[str, Any]) -> list[str]:
  """Every key the schema names, nested ones too."""
  keys = []
  for key, sub in (schema.get("properties") or {}).items():
    keys += [key, *schema_keys(sub), *schema_keys(sub.get("items") or {})]
  return keys


def sections(prompt: str, schema: Mapping[str, Any] | None,
             personas: Sequence[str]) -> dict[str, float]:
  """The prompt's tokens by section, line by line: a line holding a
  persona's words, a numbered norm, a plan hour, an event or talk, the
  description of one of the answer's keys, or else an instruction."""
  keys = tuple(schema_keys(schema or {}))
  out = dict.fromkeys(SECTIONS, 0.0)
  listing = False  # Within a list of events, up to the next blank line.
  for line in prompt.splitlines(keepends=True):
    bare = line.strip()
    listing = listing and bool(bare)
    if listing:
      part = "events"
    elif any(p[:60] in bare for p in personas) or re.match(
        r"^(?:About .*:|Goal: |Setting: )", bare):
      part = "persona"
    elif _NORM.search(bare) or re.search(r"\bnorms?\b.*\(importance", bare):
      part = "norms"
    elif _PLAN.search(bare):
      part = "plan"
    elif any(bare.startswith(f"{k}: ") for k in keys):
      part = "fields"
    elif _EVENT.search(bare) or bare.startswith("Recent events"):
      part = "events"
    else:
      part = "instructions"
    listing = listing or bool(_LISTS.search(bare))
    out[part] += tokens(line)
  return out


def play(scenario: str, steps: int | None, out: Path) -> tuple[
    BudgetModel, float]:
  """The scenario on the scripted café; the model and its agent-hours."""
  model = BudgetModel()
  loaded = load_scenario(scenario)
  runner.run_episode(scenario, arm="normative", seed=1, out_dir=out,
                     model=model, embedder=shared_embedder(),
                     progress=False, steps=steps, stated_belief=False)
  played = steps or loaded.total_steps
  hours = played * loaded.clock.minutes_per_step / 60
  return model, hours * len(loaded.agents)


def replay_golden(out: Path) -> tuple[Any, float]:
  """The golden recording replayed (tests/golden_replay.py), its prompts
  kept: the embedded model's own prompts, as long as no prompt changed
  since it was recorded (a changed one is refused, a failed call)."""
  from tests import golden_replay as golden  # pylint: disable=import-outside-toplevel

  class Kept(golden.ReplayModel):
    """The replay, keeping each JSON call as the scripted model does."""

    def __init__(self, *args, **kwargs):
      super().__init__(*args, **kwargs)
      self.calls: list[Call] = []
      self.caps: dict[str, list[int]] = collections.defaultdict(list)
      self._kept = threading.Lock()

    def sample_json(self, prompt, schema, *, max_tokens=512,
                    temperature=0.2, seed=None, tag=base.DEFAULT_TAG):
      with self._kept:
        self.calls.append(Call(tag, "json", prompt, schema))
        self.caps[tag].append(max_tokens)
      return super().sample_json(prompt, schema, max_tokens=max_tokens,
                                 temperature=temperature, seed=seed, tag=tag)

  out.mkdir(parents=True)
  shutil.copyfile(golden.GOLDEN / golden.CACHE, out / golden.CACHE)
  cache = golden.ResponseCache(out / golden.CACHE)
  model = Kept(cache, seed=golden.SEED)
  try:
    golden.replay(out / "run", model)
  finally:
    cache.close()
  model.calls = [c for c in model.calls if c.tag != STATED_BELIEF]
  loaded = load_scenario(golden.SCENARIO)
  hours = loaded.total_steps * loaded.clock.minutes_per_step / 60
  return model, hours * len(loaded.agents)


def golden_answers(path: Path = GOLDEN) -> dict[frozenset, list[int]]:
  """The recorded answers' completion tokens, by the keys of their JSON."""
  found: dict[frozenset, list[int]] = collections.defaultdict(list)
  with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
    for text, completion in conn.execute(
        "SELECT text, completion_tokens FROM responses"):
      try:
        answer = json.loads(text)
      except json.JSONDecodeError:
        continue
      if isinstance(answer, dict):
        found[frozenset(answer)].append(int(completion or 0))
  return found


def table(model: Any, agent_hours: float,
          personas: Sequence[str]) -> list[dict[str, Any]]:
  """Per operation: calls per agent-hour, prompt tokens, sections, caps."""
  by_tag: dict[str, list] = collections.defaultdict(list)
  for call in model.calls:
    by_tag[call.tag].append(call)
  rows = []
  for tag, calls in by_tag.items():
    sizes = [tokens(c.prompt) + (tokens(SYSTEM) if c.kind == "json" else 0)
             for c in calls]
    split = collections.Counter()
    for c in calls:
      split.update(sections(c.prompt, c.schema, personas))
    caps = model.caps.get(tag, [])
    rows.append({
        "op": tag, "calls": len(calls), "per_hour": len(calls) / agent_hours,
        "mean": statistics.fmean(sizes), "max": max(sizes),
        "sections": {k: split[k] / len(calls) for k in SECTIONS},
        "cap": max(caps) if caps else None,
        "keys": frozenset((calls[0].schema or {}).get("properties") or ())})
  return sorted(rows, key=lambda r: -r["per_hour"] * r["mean"])


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--scenario", default="hobbs_cafe_mini")
  parser.add_argument("--steps", type=int, default=None,
                      help="slots to play (default: the scenario's all)")
  parser.add_argument("--golden", action="store_true",
                      help="set each cap beside the golden recording's "
                           "completion tokens")
  parser.add_argument("--replay", action="store_true",
                      help="the golden recording's own prompts instead "
                           "(the mini café on the embedded model; only "
                           "while no prompt changed since it was recorded)")
  parser.add_argument("--json", metavar="FILE",
                      help="also write the table as JSON")
  args = parser.parse_args(argv)
  scenario = "hobbs_cafe_mini" if args.replay else args.scenario
  personas = [a.persona for a in load_scenario(scenario).agents]
  with tempfile.TemporaryDirectory(prefix="prompt-budget-") as tmp:
    if args.replay:
      model, agent_hours = replay_golden(Path(tmp) / "golden")
    else:
      model, agent_hours = play(scenario, args.steps, Path(tmp) / "run")
  rows = table(model, agent_hours, personas)
  golden = golden_answers() if args.golden else {}
  source = "the golden recording" if args.replay else "the scripted café"
  print(f"{scenario}, {agent_hours:.2f} agent-hours on {source}; "
        "tokens = characters / 4")
  failed = {t: c["failed_calls"] for t, c in model.usage.by_tag().items()
            if c.get("failed_calls")}
  if failed:
    print(f"failed calls: {failed}" + (
        " (prompts changed since the recording)" if args.replay else ""))
  print()
  print(f"{'operation':20} {'calls/ah':>8} {'prompt':>7} {'max':>6} "
        f"{'tok/ah':>7}  " + " ".join(f"{s[:8]:>8}" for s in SECTIONS))
  total_calls = total_tokens = 0.0
  for r in rows:
    per = r["per_hour"] * r["mean"]
    total_calls += r["per_hour"]
    total_tokens += per
    print(f"{r['op']:20} {r['per_hour']:8.2f} {r['mean']:7.0f} "
          f"{r['max']:6.0f} {per:7.0f}  " + " ".join(
              f"{r['sections'][s]:8.0f}" for s in SECTIONS))
  print(f"{'all':20} {total_calls:8.2f} {'':7} {'':6} {total_tokens:7.0f}")
  print(f"\n{'operation':20} {'cap':>5}" + (
      f" {'golden answers: n':>18} {'mean':>5} {'max':>5}" if golden else ""))
  for r in rows:
    line = f"{r['op']:20} {r['cap'] if r['cap'] is not None else '-':>5}"
    if golden:
      took = golden.get(r["keys"], [])
      line += (f" {len(took):18d} {statistics.fmean(took):5.0f} "
               f"{max(took):5d}" if took else f" {0:18d}")
    print(line)
  if args.json:
    Path(args.json).write_text(json.dumps(
        [{**r, "keys": sorted(r["keys"])} for r in rows], indent=1),
        encoding="utf-8")
  return 0


if __name__ == "__main__":
  sys.exit(main())
