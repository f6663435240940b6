"""What the norm entrepreneurs create, seed by seed: the norms are the
persona's own, or the prompt's examples copied?

For each seed and each entrepreneur of a scenario, one CreateNorm call as a
run makes it (same persona, setting and count; the model seeded by the run
seed), then counts the created norms equal to a target norm's text word for
word (case and punctuation aside), and those naming their own person (a
run rejects them as no norm). A prompt that shows example norms makes a
small model write them back, and the belief metric then measures the prompt:
issue 11's "before and after" figure. Runs against any endpoint (the
embedded model by default; CRSEC_BASE_URL / CRSEC_MODEL for another).
Usage: .venv/bin/python bench/created_norms.py [--scenario NAME] [--seeds 5]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from crsec_concordia.models import EndpointConfig, make_model  # noqa: E402
from crsec_concordia.operations.create_norm import create_norm  # noqa: E402
from crsec_concordia.operations.immediate_evaluation import names_person  # noqa: E402
from scenarios.loader import load_scenario  # noqa: E402


def words(sentence: str) -> tuple[str, ...]:
  """The sentence's words in lower case: 'No smoking indoors.' ==
  'no smoking indoors'."""
  return tuple(re.findall(r"[a-z0-9']+", sentence.lower()))


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--scenario", default="hobbs_cafe")
  parser.add_argument("--seeds", type=int, default=5)
  args = parser.parse_args()
  scenario = load_scenario(args.scenario)
  targets = {words(t.text): t.id for t in scenario.target_norms}
  entrepreneurs = [a for a in scenario.agents if a.role == "entrepreneur"]
  count = scenario.crsec.initial_norm_count
  commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short",
                           "HEAD"], capture_output=True, text=True).stdout
  print(f"{scenario.name} at {commit.strip() or ROOT}: {len(entrepreneurs)} "
        f"entrepreneurs x {args.seeds} seeds, {count} norms each")
  created = verbatim = failed = naming = 0
  start = time.monotonic()
  for seed in range(1, args.seeds + 1):
    model = make_model(EndpointConfig(), seed=seed)
    for agent in entrepreneurs:
      failures: list = []
      norms = create_norm(model, name=agent.name, persona=agent.persona,
                          setting=scenario.setting, count=count,
                          on_failure=failures.append)
      if norms is None:
        failed += 1
        print(f"seed {seed} {agent.name}: CreateNorm failed: "
              f"{failures[-1] if failures else '?'}")
        continue
      for norm in norms:
        created += 1
        target = targets.get(words(norm["content"]))
        verbatim += target is not None
        # A run rejects it as no norm (NormMemory): a description of them.
        named = names_person(norm["content"], [agent.name]) is not None
        naming += named
        mark = (f"  == {target}" if target else "") + (
            "  (names them: rejected)" if named else "")
        print(f"seed {seed} {agent.name}: {norm['content']}{mark}")
  print(f"created {created} norms ({failed} calls failed) in "
        f"{time.monotonic() - start:.0f} s; equal to a target word for word: "
        f"{verbatim} ({verbatim / max(created, 1):.0%}); naming their person "
        f"(rejected in a run): {naming}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
