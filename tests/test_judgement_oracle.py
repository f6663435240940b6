"""The oracle ceiling: the pipeline run on a model that is always right.

`bench/judgement_probe.py --oracle --all` answers every judgement as the
labels say (tests/judgement_oracle.py), with no language model, over every
venue's labelled cases, shipped and held-out, and the matcher's judge over
the labelled norms. Under RefereePolicy.trusting() (what an uncalibrated
model gets) nothing may refuse those answers: its last line, the worst
precision and recall over venues and judgements, must be at least 0.98.
With the labels flipped at a known rate, the error measured must come out
near that rate.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

from crsec_concordia import models
from crsec_concordia.calibration import policy as policy_lib
from crsec_concordia.calibration import probes
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.metrics.classifiers import probe_run
from crsec_concordia.scenarios import load_scenario
from tests.judgement_oracle import JudgementOracle

ROOT = Path(__file__).resolve().parent.parent
CEILING = re.compile(r"^oracle ceiling: worst P (\d\.\d\d) R (\d\.\d\d)$")
# Each venue's cases: 44 to 69 referee cases (half with no behaviour), 8
# to 14 occasion answers, 16 to 23 conflicts. At a flip rate of 0.2 a rate
# measured over about 125 cases has a standard deviation of about 0.036:
# the tolerance is a little over two of them.
NOISE, TOLERANCE = 0.2, 0.08


def _bench():
  sys.path.insert(0, str(ROOT / "bench"))
  spec = importlib.util.spec_from_file_location(
      "judgement_probe", ROOT / "bench" / "judgement_probe.py")
  module = importlib.util.module_from_spec(spec)
  sys.modules.setdefault("judgement_probe", module)
  spec.loader.exec_module(module)
  return module


probe = _bench()


def _venues():
  shipped = [load_scenario(n) for n in probes.probed_venues()]
  held = [(load_scenario(str(s)), p) for s, p in probe.heldout_venues()]
  return ([(s, probes.load_probes(probes.probes_path(s), s)) for s in shipped]
          + [(s, probes.load_probes(p, s)) for s, p in held])


@pytest.fixture(scope="module")
def ceiling_run():
  """`--oracle --all`, its printed lines; no model may be made."""
  def refuse(*args, **kwargs):
    raise AssertionError("the oracle run made a language model")
  patch = pytest.MonkeyPatch()
  patch.setattr(models, "make_model", refuse)
  try:
    out = StringIO()
    with redirect_stdout(out):
      code = probe.main(["--oracle", "--all"])
  finally:
    patch.undo()
  return code, out.getvalue().splitlines()


def test_the_oracle_ceiling_is_at_least_098_with_no_model(ceiling_run):
  code, lines = ceiling_run
  assert code == 0
  found = CEILING.match(lines[-1])
  assert found, lines[-5:]
  worst_p, worst_r = map(float, found.groups())
  assert worst_p >= 0.98 and worst_r >= 0.98, "\n".join(lines)


def test_the_oracle_runs_every_venue_shipped_and_heldout(ceiling_run):
  _, lines = ceiling_run
  names = [*probes.probed_venues(),
           *(load_scenario(str(s)).name for s, _ in probe.heldout_venues())]
  for name in names:
    assert f"scenario {name} (oracle)" in lines
  assert any(line.startswith("norms cafe") for line in lines)
  assert any(line.startswith("norms garden") for line in lines)
  assert "| venue | judgement | trusting P / R | all_on P / R | n |" in lines


def test_nothing_is_refused_under_trusting_and_no_false_alarm(ceiling_run):
  """Every refused case is printed with its policy; under trusting() there
  is none, and DetectConflict raises no false alarm, on intentions or not."""
  _, lines = ceiling_run
  assert not [line for line in lines if line.startswith("  trusting ")
              and "refused" in line]
  alarms = [line for line in lines if "DetectConflict:" in line]
  assert len(alarms) == len(_venues())
  for line in alarms:
    c = re.search(r"found (\d+)/(\d+), false alarms (\d+)/\d+, on "
                  r"intentions (\d+)/\d+", line)
    assert c[1] == c[2] and c[3] == "0" and c[4] == "0", line


def test_a_noisy_oracle_is_measured_near_its_rate():
  """Labels flipped at 0.2 per case: a case showing behaviours answered as
  none, a none case as one behaviour drawn at random, a breach as none and
  the reverse. Under trusting() the measured miss rate over labelled cases
  and false-tag rate over none cases (so precision and recall over tags,
  half the cases being none) come out near 0.2 (0.8)."""
  trusting = RefereePolicy.trusting()
  missed = labelled = alarms = nones = 0
  pairs, conflicts = [], []
  for scenario, cases in _venues():
    cases = cases.only(["referee", "conflicts"])
    oracle = JudgementOracle(scenario, cases, noise=NOISE, seed=1)
    calibration = probe_run.measure_venue(oracle.model, shared_embedder(),
                                          scenario, cases, jobs=4)
    for case in calibration["referee"]:
      tags, _ = policy_lib.referee_tags(case, trusting, calibration["floors"])
      pairs.append((case["truth"], tags))
      labelled += bool(case["truth"])
      missed += bool(case["truth"]) and not tags
      nones += not case["truth"]
      alarms += not case["truth"] and bool(tags)
    conflicts += calibration["conflicts"]
  assert abs(missed / labelled - NOISE) <= TOLERANCE
  assert abs(alarms / nones - NOISE) <= TOLERANCE
  counts = policy_lib.tag_counts(pairs)
  assert abs(policy_lib.precision(counts) - (1 - NOISE)) <= 0.1
  assert abs(policy_lib.recall(counts) - (1 - NOISE)) <= 0.1
  wrong = sum(c["said"] is not c["breaks"] for c in conflicts)
  assert abs(wrong / len(conflicts) - NOISE) <= TOLERANCE


@pytest.mark.parametrize("argv, said", [
    (["--noise", "0.2"], "--noise flips the oracle's labels: give --oracle"),
    (["--oracle", "--record"], "--oracle asks no model"),
    (["--oracle", "--noise", "1.5"], "--noise must be a rate between 0 and 1"),
])
def test_oracle_flags_that_do_not_go_together_exit_2(argv, said, capsys):
  with pytest.raises(SystemExit) as info:
    probe.main(argv)
  assert info.value.code == 2
  assert said in capsys.readouterr().err
