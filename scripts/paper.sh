#!/usr/bin/env bash
# The paper's experiment on the embedded model, run to its end and published
# (issue 21): the full café's 84 slots in both arms (seed 1), the mini café
# over 5 seeds per arm (for intervals over runs), then docs/results/. Every
# step goes on where it stopped: a completed run is kept, an interrupted one
# resumed (`crsec resume`), a sweep skips its completed runs; the referee's
# answers on the labelled probes are recorded for the corrected estimates
# (judgement_probe.py --record). On 2 CPU cores
# the baseline arm took 38 minutes; the normative arm takes 3.5 to 4 hours.
#   scripts/paper.sh [RUNS_DIR]    (default runs/paper, ignored by git)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-runs/paper}"
mkdir -p "$RUNS"
bash scripts/setup.sh
crsec=.venv/bin/crsec

# completed | resumable | new: where a run directory stands.
state() {
  .venv/bin/python - "$1" <<'PY'
import json, pathlib, sys
info = pathlib.Path(sys.argv[1]) / "run.json"
if not info.is_file():
    print("new")
else:
    run = json.loads(info.read_text())
    done = int(run.get("completed_steps") or 0)
    print("completed" if run.get("status") == "completed"
          else "resumable" if done > 0 else "new")
PY
}

for arm in baseline normative; do
  dir="$RUNS/hobbs_cafe-$arm-seed1"
  case "$(state "$dir")" in
    completed) echo "paper: $dir is complete" ;;
    resumable) $crsec resume "$dir" ;;
    # --no-cache: the published cost (wall time, tokens) is that of the
    # model answering, not of answers replayed from an earlier run's cache.
    new) rm -rf "$dir"
         $crsec run scenarios/hobbs_cafe.yaml --agents "$arm" --seed 1 \
           --no-cache --out "$dir" ;;
  esac
done
$crsec sweep examples/sweeps/mini_seeds.yaml --out "$RUNS/mini-seeds"
# The committed-minority experiment at the embedded model's size (issue 45:
# 0, 20 and 40% of ten neighbours, two seeds, four slots): its tipping
# curve.
$crsec sweep examples/sweeps/committed_minority_small.yaml \
  --out "$RUNS/minority-small"
# The embedded model's calibration, shipped with the package, for corrected
# behaviour shares (crsec_concordia/calibration/data/; docs/calibration.md).
$crsec calibrate --out crsec_concordia/calibration/data/
$crsec report --publish docs/results --notes docs/results/reading.md \
  "$RUNS"/hobbs_cafe-baseline-seed1 \
  "$RUNS"/hobbs_cafe-normative-seed1 "$RUNS/mini-seeds" \
  "$RUNS/minority-small"
