"""Records the golden replay (tests/golden/mini_cafe/) anew.

Plays the mini café (seed 1, five slots) on the embedded model with a fresh
response cache, replays that cache with no model, and keeps the cache and
the replay's run directory and metrics as the test's expectation
(tests/golden_replay.py). Run it when a change is meant to alter what the
model is asked (a prompt, a schema, a seed); it takes a few minutes.
`--from-cache FILE` skips the live run and takes a cache recorded before.
`--keep-recorded` starts the live run from the recording's own cache
(tests/golden/mini_cafe/responses.sqlite), so that the model is asked only
the prompts the recording lacks (a new operation's, a changed prompt's)
and every other call gives the answer it gave before. `--batched` records
tests/golden/mini_cafe_batched/ (a place's slot judged together) instead.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crsec_concordia.models import EndpointConfig, make_model  # noqa: E402
from crsec_concordia.models.cache import ResponseCache  # noqa: E402
from tests import golden_replay as golden  # noqa: E402


def compact_copy(source: Path, target: Path) -> None:
  """The cache as one small SQLite file (no WAL beside it)."""
  target.unlink(missing_ok=True)
  with sqlite3.connect(source) as conn:
    conn.execute("VACUUM INTO ?", (str(target),))


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--from-cache", type=Path,
                      help="a response cache recorded before, instead of a "
                      "live run")
  parser.add_argument("--keep-recorded", action="store_true",
                      help="start the live run from the recording's cache: "
                      "only the calls it lacks go to the model")
  parser.add_argument("--batched", action="store_true",
                      help="record mini_cafe_batched: the referee's and "
                      "DetectConflict's questions of a place's slot asked "
                      "together")
  args = parser.parse_args()
  if args.from_cache and args.keep_recorded:
    parser.error("--from-cache and --keep-recorded exclude each other")
  recording = golden.BATCHED if args.batched else golden.PER_ACTION
  target = recording.directory
  with tempfile.TemporaryDirectory() as tmp:
    work = Path(tmp)
    cache_path = work / golden.CACHE
    if args.from_cache:
      compact_copy(args.from_cache, cache_path)
    else:
      if args.keep_recorded:
        kept = target / golden.CACHE
        if not kept.is_file():
          # A first batched recording starts from the default one's
          # answers: the calls both runs make are answered alike.
          kept = golden.PER_ACTION.directory / golden.CACHE
        compact_copy(kept, cache_path)
      model = make_model(EndpointConfig(), seed=golden.SEED,
                         cache_path=cache_path,
                         progress=lambda m: print(m, file=sys.stderr))
      golden.replay(work / "live", model, recording, progress=True)
      model.cache.close()
    cache = ResponseCache(cache_path)
    replayed = golden.replay(work / "replay",
                             golden.ReplayModel(cache, seed=golden.SEED),
                             recording)
    cache.close()
    golden.report(replayed, work / "report")
    golden.write_expected(golden.normalised(replayed),
                          target / golden.EXPECTED)
    compact_copy(cache_path, target / golden.CACHE)
  size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
  print(f"recorded {target} ({size / 1024:.0f} KB)")
  return 0


if __name__ == "__main__":
  sys.exit(main())
