"""LLM calls and tokens per agent step, by component: normative vs baseline.

Both agents get the SAME inputs on the embedded model (no cache): a scripted
stream of café observations (behaviours of others and one conversation) and
an act after each observation, as the game master would deliver them. One
"agent step" = one observation plus one act.
Usage: .venv/bin/python bench/agent_step_cost.py [STEPS]
"""

import copy
import sys
import time

sys.path.insert(0, ".")

from concordia.associative_memory import basic_associative_memory  # noqa: E402
from concordia.typing import entity as entity_lib  # noqa: E402

from crsec_concordia import observations as obs  # noqa: E402
from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.models import EndpointConfig, make_model  # noqa: E402
from crsec_concordia.prefabs import PREFABS  # noqa: E402

EVENTS = [
    ("Carlos Gomez", "indoors", "Carlos lights a cigarette at his table."),
    ("Tom Gomez", "indoors", "Tom shouts a joke across the room."),
    ("Tamara Rodriguez", "indoors", "Tamara pays for lunch and leaves no tip."),
    ("Carlos Gomez", "outdoors", "Carlos smokes on the sidewalk."),
    ("Tom Gomez", "indoors", "Tom reads quietly in the corner."),
    ("Tamara Rodriguez", "indoors", "Tamara orders a tea."),
]


def observation(step: int) -> str:
  stamp = obs.Stamp(1, f"{9 + step // 6:02d}:{(step % 6) * 10:02d}", step)
  if step == 3:
    return obs.format_conversation(
        stamp, "Abigail Chen", "Isabella Rodriguez", "smoking indoors",
        [("Abigail Chen", "Smoking inside bothers everyone; it isn't allowed."),
         ("Isabella Rodriguez", "You're right, I'll remind people.")])
  actor, place, text = EVENTS[step % len(EVENTS)]
  return obs.format_action(stamp, actor, place, text)


def run(arm: str, steps: int) -> dict:
  model = make_model(EndpointConfig(), seed=11)
  prefab = copy.deepcopy(PREFABS[f"{arm}__Entity"])
  prefab.params = {"name": "Isabella Rodriguez", "role": "entrepreneur",
                   "setting": "Hobbs Cafe", "initial_norm_count": 3,
                   "persona": "Isabella, 28, serves at Hobbs Cafe; calm, "
                              "friendly, dislikes smoke and noise."}
  agent = prefab.build(model, basic_associative_memory.AssociativeMemoryBank(
      sentence_embedder=shared_embedder()))
  start = time.monotonic()
  for step in range(1, steps + 1):
    agent.observe(observation(step))
    agent.act(entity_lib.ActionSpec(
        call_to_action="What does {name} do next?",
        output_type=entity_lib.OutputType.FREE))
  return {"seconds": time.monotonic() - start, "by_tag": model.usage.by_tag(),
          "totals": model.usage.totals()}


def main() -> None:
  steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
  results = {arm: run(arm, steps) for arm in ("baseline", "normative")}
  print(f"{steps} agent steps (observe + act) on the embedded model\n")
  print(f"{'arm':10} {'component':22} {'calls/step':>10} {'prompt tok/step':>16}"
        f" {'compl. tok/step':>16}")
  for arm, r in results.items():
    for tag, c in r["by_tag"].items():
      print(f"{arm:10} {tag:22} {c['calls'] / steps:10.2f} "
            f"{c['prompt_tokens'] / steps:16.1f} "
            f"{c['completion_tokens'] / steps:16.1f}")
    t = r["totals"]
    print(f"{arm:10} {'TOTAL':22} {t['calls'] / steps:10.2f} "
          f"{t['prompt_tokens'] / steps:16.1f} "
          f"{t['completion_tokens'] / steps:16.1f}   "
          f"({r['seconds'] / steps:.1f} s/step)")
  b, n = results["baseline"]["totals"], results["normative"]["totals"]
  print(f"\nnormative/baseline: calls x{n['calls'] / max(1, b['calls']):.1f}, "
        f"tokens x{(n['prompt_tokens'] + n['completion_tokens']) / max(1, b['prompt_tokens'] + b['completion_tokens']):.1f}")


if __name__ == "__main__":
  main()
