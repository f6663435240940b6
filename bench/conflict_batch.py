"""DetectConflict's calls per agent-hour with a place's slot asked together
and without, on a scripted café (no language model).

The café of bench/shared_judgement.py (N guests, every third a norm
entrepreneur, the others each with a habit; each slot a new deed) is
played twice with the scripted model and the real sentence embedder: the
questions of a slot shared as today (operations/detect_conflict_sharing.py:
an observer who shares none asks alone, the rest pooled by rule), and with
every agent's `conflicts_batched` param on (the distinct questions of one
place in one slot in one call, operations/detect_conflict_batch.py). The
scripted judge answers each question alike in both forms (a breach where a
deed's habit meets its rule, quoting the deed), so the two runs' conflict
records must be the same. The café's entrepreneurs all hold the same
five norms word for word, which today's sharing already asks once; with
`--own-words` each words them its own way (one of four phrasings of each,
by its number), as a model's CreateNorm does, so few questions are held
word for word and each observer asks alone. Prints, per size: DetectConflict
calls and questions per agent-hour in each mode, the largest call's
questions, and whether the conflict records are the same.

  .venv/bin/python bench/conflict_batch.py                 # 10 agents
  .venv/bin/python bench/conflict_batch.py --own-words --sizes 10 30
  .venv/bin/python bench/conflict_batch.py --sizes 10 30 --places 3
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

import shared_judgement as cafe  # noqa: E402

from crsec_concordia import runner  # noqa: E402
from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.operations.detect_conflict import OP  # noqa: E402
from crsec_concordia.prefabs import params as params_lib  # noqa: E402
from tests import crsec_script as cs  # noqa: E402

# What a batched DetectConflict prompt opens its questions with.
BATCHED = r"Each question below has an id"
_QUESTION = re.compile(r'^\[(?P<id>q\d+)\] (?P<actor>.+?) \((?P<place>.*?)\): '
                       r'"(?P<deed>.*)"$', re.M)


def batch_judge(prompt: str, schema: dict) -> dict:
  """bench/shared_judgement.py's judge, by question id."""
  answer = {}
  for found in _QUESTION.finditer(prompt):
    rule = prompt[found.end():].split("Rule: ", 1)[1].split("\n", 1)[0]
    did, rule = found["deed"].lower(), rule.lower()
    breaks = (("cigarette" in did and "smok" in rule)
              or (("loud" in did or "shout" in did) and "quiet" in rule)
              or (("tip" in did) and "tip" in rule))
    answer[found["id"]] = ({"evidence": found["deed"][:150],
                            "verdict": "breaks"} if breaks else
                           {"evidence": "none", "verdict": "unrelated"})
  return {k: answer[k] for k in schema["properties"]}


# Four phrasings of each of the scripted café's five norms (the judge reads
# "smok", "quiet" and "tip" in a rule, as in bench/shared_judgement.py).
PHRASINGS = (
    ("No smoking indoors.", "Smoking inside is not allowed.",
     "Do not smoke indoors.", "Nobody should smoke inside."),
    ("Be quiet in public places.", "Keep quiet around others.",
     "Stay quiet in shared rooms.", "Keep your voice quiet and low."),
    ("Tip after meals.", "Leave a tip after eating.",
     "Always tip the staff.", "People usually tip after a meal."),
    ("Clean up after yourself.", "Tidy up your own mess.",
     "Leave your table clean.", "Clear away what you used."),
    ("Wait your turn in line.", "Do not cut the queue.",
     "Queue patiently for service.", "Wait for your turn to order."))


def own_words(prompt: str, schema: dict) -> dict:
  """CreateNorm: the five norms in the agent's own phrasings."""
  del schema
  k = int(re.search(r"Guest (\d{3})", prompt).group(1)) // 3 % 4
  kinds = ("injunctive", "injunctive", "descriptive", "injunctive",
           "injunctive")
  return {"norms": [{"content": p[k], "type": t, "utility": 90 - 10 * n}
                    for n, (p, t) in enumerate(zip(PHRASINGS, kinds))]}


def model(size: int, places: int, words: bool = False):
  scripted = cafe.model(size, places)
  scripted.add_rule(BATCHED, batch_judge, first=True)
  if words:
    scripted.add_rule(cs.CREATE, own_words, first=True)
  return scripted


def measure(size: int, places: int, batched_on: bool, embedder,
            out: Path, words: bool = False) -> dict:
  scripted = model(size, places, words)
  started = time.monotonic()
  run_dir = runner.run_episode(
      cafe.scenario(size, places), arm="normative", seed=1,
      out_dir=out / f"{size}-{'batched' if batched_on else 'shared'}",
      model=scripted, embedder=embedder, progress=False,
      conflicts_batched=batched_on)
  hours = size * cafe.SLOTS * cafe.MINUTES / 60
  calls = [c for c in scripted.calls if c.tag == OP]
  return {"calls": len(calls) / hours,
          "questions": sum(len(c.schema["properties"]) for c in calls)
                       / hours,
          "largest": max((len(c.schema["properties"]) for c in calls),
                         default=0),
          "conflicts": cafe.conflicts(run_dir), "run_dir": run_dir,
          "wall": time.monotonic() - started}


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--sizes", type=int, nargs="+", default=[10])
  parser.add_argument("--places", type=int, default=1)
  parser.add_argument("--own-words", action="store_true",
                      help="each entrepreneur words its norms its own way")
  args = parser.parse_args(argv)
  embedder = shared_embedder()
  print(f"{cafe.SLOTS} slots of {cafe.MINUTES} min, scripted café in "
        f"{args.places} place(s), norms in "
        f"{'their own' if args.own_words else 'the same'} words; "
        "DetectConflict per agent-hour "
        f"({params_lib.CONFLICTS_BATCHED} off | on)")
  with tempfile.TemporaryDirectory() as tmp:
    for size in args.sizes:
      shared = measure(size, args.places, False, embedder, Path(tmp),
                       args.own_words)
      joint = measure(size, args.places, True, embedder, Path(tmp),
                      args.own_words)
      same = shared["conflicts"] == joint["conflicts"]
      print(f"{size} agents: calls {shared['calls']:.2f} | "
            f"{joint['calls']:.2f} ({joint['calls'] / shared['calls']:.2f} "
            f"of shared); questions {shared['questions']:.2f} | "
            f"{joint['questions']:.2f}; largest call {shared['largest']} | "
            f"{joint['largest']} questions; conflict records the same: "
            f"{'yes' if same else 'NO'}; wall s {shared['wall']:.0f}, "
            f"{joint['wall']:.0f}", flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
