"""The game master's calls per agent-hour with a place's slot judged
together and without, on a scripted café (no language model).

The café of bench/shared_judgement.py (N guests, each with a habit:
smoking, talking loudly, leaving without a tip, or none; each slot a new
deed) is played twice with the scripted model and the real sentence
embedder: the referee asking about each action alone (the default), and
with the referee's `batched` setting (game_masters/referee/batch.py: one
call per place-slot batch, the second look batched too). The scripted
referee tags a deed by its words, quotes the action and names its actor as
the doer, so both runs keep the same tags; the second look answers "none".
Prints, per size: GM.adjudicate, GM.doer, GM.look and all game-master calls
per agent-hour in each mode, the ratio, whether every action record's
behaviours are the same in both runs, and the place-slot sizes
(bench/place_slot_sizes.py) of the run.

  .venv/bin/python bench/place_batch.py                  # 10 agents
  .venv/bin/python bench/place_batch.py --sizes 10 30 --places 3
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import place_slot_sizes  # noqa: E402
import shared_judgement as cafe  # noqa: E402

from crsec_concordia import runner  # noqa: E402
from crsec_concordia.calibration import run_policy  # noqa: E402
from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.rundir import format as format_lib  # noqa: E402
from crsec_concordia.rundir import reading  # noqa: E402

GM_TAGS = ("GM.adjudicate", "GM.doer", "GM.look")
WORDS = {"cigarette": "smoking_indoors", "loud": "loud", "shout": "loud",
         "tip": "no_tip"}
_ONE = re.compile(r'^(?P<actor>[^:\n]+): "(?P<action>.*)"$', re.M)
_HERE = re.compile(r" is at (?P<place>[a-z_0-9]+) now\.")


def _item(key: str) -> re.Pattern[str]:
  return re.compile(rf'^\[{key}\] (?P<head>.*?)(?P<actor>[^:\n.]+): '
                    rf'"(?P<action>.*)"$', re.M)


def _answer(action: str, actor: str, places: list[str], head: str,
            doer: bool) -> dict:
  ids = list(dict.fromkeys(b for w, b in WORDS.items() if w in action))
  ids = [*ids, "none", "none"]
  here = _HERE.search(head)
  answer = {"narration": action,
            "place": here["place"] if here and here["place"] in places
                     else places[0],
            "behaviour": ids[0], "also": ids[1],
            "evidence": action if ids[0] != "none" else "none"}
  if doer:
    answer["doer"] = actor if ids[0] != "none" else "nobody"
  return answer


def referee(prompt: str, schema: dict) -> dict:
  """One action, as the per-action general call asks it."""
  found = _ONE.search(prompt)
  places = schema["properties"]["place"]["enum"]
  return _answer(found["action"], found["actor"], places, prompt, False)


def batched(prompt: str, schema: dict) -> dict:
  """Every action of a batched call, by its id."""
  out = {}
  for key, one in schema["properties"].items():
    found = _item(key).search(prompt)
    out[key] = _answer(found["action"], found["actor"].strip(),
                       one["properties"]["place"]["enum"], found["head"],
                       "doer" in one["properties"])
  return out


def look_none(prompt: str, schema: dict) -> dict:
  """The batched second look answered "none" for every action."""
  del prompt
  return {k: {f: (one["properties"]["behaviour"]["enum"][-1]
                  if f == "behaviour" else "none" if f == "evidence"
                  else "nobody") for f in one["properties"]}
          for k, one in schema["properties"].items()}


def model(size: int, places: int):
  scripted = cafe.model(size, places)
  # Last added, first asked: the batched prompts, then the per-action
  # general call (which lists talk_only; the per-action look does not).
  scripted.add_rule(r"You are the referee.*- talk_only", referee, first=True)
  scripted.add_rule(r"Each action below has an id\. Answer for every id",
                    batched, first=True)
  scripted.add_rule(r"Each action below has an id and its own behaviours",
                    look_none, first=True)
  return scripted


def measure(size: int, places: int, batched_on: bool, embedder,
            out: Path) -> dict:
  scripted = model(size, places)
  started = time.monotonic()
  run_dir = runner.run_episode(
      cafe.scenario(size, places), arm="normative", seed=1,
      out_dir=out / f"{size}-{'batched' if batched_on else 'alone'}",
      model=scripted, embedder=embedder, progress=False,
      referee_batched=batched_on)
  hours = size * cafe.SLOTS * cafe.MINUTES / 60
  calls = scripted.calls_by_tag()
  per = {t: calls.get(t, 0) / hours for t in GM_TAGS}
  per["GM"] = sum(v / hours for t, v in calls.items() if t.startswith("GM."))
  tags = {(r["step"], r["actor"]): r["behaviours"]
          for r in reading.read_records(run_dir / format_lib.EVENTS)
          if r["kind"] == format_lib.ACTION}
  return {"per": per, "tags": tags, "run_dir": run_dir,
          "wall": time.monotonic() - started}


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--sizes", type=int, nargs="+", default=[10])
  parser.add_argument("--places", type=int, default=1)
  args = parser.parse_args(argv)
  embedder = shared_embedder()
  print(f"{cafe.SLOTS} slots of {cafe.MINUTES} min, scripted café in "
        f"{args.places} place(s); game-master calls per agent-hour "
        f"({run_policy.BATCHED_PARAM} off | on)")
  with tempfile.TemporaryDirectory() as tmp:
    for size in args.sizes:
      alone = measure(size, args.places, False, embedder, Path(tmp))
      joint = measure(size, args.places, True, embedder, Path(tmp))
      for tag in (*GM_TAGS, "GM"):
        print(f"  {size} agents {tag:>13}: {alone['per'][tag]:6.2f} | "
              f"{joint['per'][tag]:6.2f}")
      ratio = joint["per"]["GM"] / alone["per"]["GM"]
      same = alone["tags"] == joint["tags"]
      sizes = place_slot_sizes.sizes(joint["run_dir"])
      print(f"game-master calls per agent-hour, {size} agents: "
            f"{alone['per']['GM']:.2f} per action, {joint['per']['GM']:.2f} "
            f"batched ({ratio:.2f} of per action); tags the same: "
            f"{'yes' if same else 'NO'}; place-slot sizes "
            f"{place_slot_sizes.describe(sizes)}; wall s "
            f"{alone['wall']:.0f}, {joint['wall']:.0f}", flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
