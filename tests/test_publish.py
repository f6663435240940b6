"""`crsec report --publish DIR RUN_OR_COMPARE...`
(metrics/present/publish.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from crsec_concordia import cli
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.metrics.present import findings, publish

sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import synthetic_run  # pylint: disable=wrong-import-position

RUN_FIELDS = {"scenario", "arm", "seed", "steps_completed", "steps_total",
              "wall_seconds", "calls", "calls_per_agent_hour",
              "tokens_per_agent_hour"}


@pytest.fixture(scope="module", autouse=True)
def embedder():
  return shared_embedder()


def compare_dir(root: Path, seeds=(1, 2, 3), steps=12) -> Path:
  arms = {arm: [str(synthetic_run(root / arm / f"seed_{s}", arm=arm, seed=s,
                                  steps=steps).relative_to(root))
                for s in seeds] for arm in ("normative", "baseline")}
  (root / "compare.json").write_text(json.dumps(
      {"scenario": "hobbs_cafe_synthetic", "seeds": list(seeds),
       "arms": arms, "failed": [], "status": "completed"}))
  return root


def test_publish_writes_readme_results_and_small_figures(tmp_path, capsys):
  cmp = compare_dir(tmp_path / "cmp")
  out = tmp_path / "results"
  assert cli.main(["report", "--publish", str(out), str(cmp)]) == 0
  assert "published" in capsys.readouterr().out
  results = json.loads((out / "results.json").read_text())
  assert len(results["runs"]) == 6
  for run in results["runs"]:
    assert RUN_FIELDS <= set(run)
    assert run["steps_completed"] == run["steps_total"] == 12
    # 10 agents x 12 steps x 10 min = 20 agent-hours.
    assert run["calls_per_agent_hour"] == pytest.approx(run["calls"] / 20,
                                                        abs=0.01)
    # Replayed answers count as calls and are shown apart.
    assert run["cached_calls"] == (2 if run["arm"] == "normative" else 0)
    assert run["calls"] > run["cached_calls"]
  group = results["groups"][0]
  # Runs of a model nobody calibrated: their behaviour shares are raw, and
  # the page says why and what to run.
  assert group["not_corrected"][0].startswith("not calibrated for scripted "
                                              "on hobbs_cafe_synthetic: run "
                                              "crsec calibrate ")
  readme = (out / "README.md").read_text()
  assert "Behaviour shares shown raw, not corrected:" in readme
  assert [f["finding"] for f in group["findings"]][0].startswith(
      "Target norms emerge")
  assert len(group["findings"]) == 6
  for f in group["findings"]:
    assert f["verdict"] in (findings.HOLDS, findings.FAILS, findings.UNSURE)
    assert f["rule"] and f["numbers"]
  # One day only: the day-2 finding cannot be told, and "at the end" says
  # when the runs end (12 slots of 10 minutes from 09:00).
  assert group["findings"][1]["verdict"] == findings.UNSURE
  assert "at Day 1 10:50, the runs' end" in group["findings"][0]["numbers"]
  assert "the runs' end" in group["findings"][5]["numbers"]
  # No labelled set for this synthetic venue: no error to show.
  assert group["measurement_error"] == []
  readme = (out / "README.md").read_text()
  assert "### Measurement error corrected for" not in readme
  # A scripted model's runs: named, not described as the embedded model's.
  assert "`scripted`" in readme and "What a 1.5B model" not in readme
  assert "| finding | verdict |" in readme
  assert "| of them cached |" in readme and "response cache" in readme
  pngs = sorted((out / "figures").glob("*.png"))
  assert len(pngs) == 5  # three targets, the conflicts and the violations
  for png in pngs:
    assert png.stat().st_size < 300_000
    assert f"figures/{png.name}" in readme
  # Nothing of a run directory is copied.
  assert not list(out.rglob("events.jsonl")) and not list(out.rglob("norms"))


def test_publishing_again_leaves_no_figure_of_the_publication_before(tmp_path):
  out = tmp_path / "results"
  (out / "figures").mkdir(parents=True)
  stale = out / "figures" / "another_group__no_smoking_indoors.png"
  stale.write_bytes(b"an earlier publication's figure")
  keep = out / "figures" / "notes.txt"
  keep.write_text("not a figure")
  publish.publish([compare_dir(tmp_path / "cmp")], out)
  assert not stale.exists() and keep.exists()
  readme = (out / "README.md").read_text()
  for png in (out / "figures").glob("*.png"):
    assert f"figures/{png.name}" in readme


def test_too_few_or_incomplete_runs_cannot_tell(tmp_path):
  cmp = compare_dir(tmp_path / "cmp", seeds=(1, 2), steps=6)
  out = tmp_path / "results"
  assert cli.main(["report", "--publish", str(out), str(cmp)]) == 0
  group = json.loads((out / "results.json").read_text())["groups"][0]
  assert {f["verdict"] for f in group["findings"]} == {findings.UNSURE}
  assert all("fewer than 3" in f["numbers"] for f in group["findings"])
  # What the rule says of these two runs alone stays beside the verdict.
  for f in group["findings"]:
    assert f["reading"] in (findings.HOLDS, findings.FAILS, findings.UNSURE)
    assert f"the rule on these runs alone: {f['reading']}" in f["numbers"]


def test_baseline_runs_alone_say_there_is_no_normative_run(tmp_path):
  runs = [synthetic_run(tmp_path / f"b{s}", arm="baseline", seed=s, steps=6)
          for s in (1, 2, 3)]
  out = tmp_path / "results"
  assert cli.main(["report", "--publish", str(out), *map(str, runs)]) == 0
  group = json.loads((out / "results.json").read_text())["groups"][0]
  assert {f["verdict"] for f in group["findings"]} == {findings.UNSURE}
  assert "no normative run" in group["findings"][1]["numbers"]
  assert "day 0" not in group["findings"][1]["numbers"]


def test_one_directory_without_publish(tmp_path, capsys):
  assert cli.main(["report", str(tmp_path), str(tmp_path)]) == 2
  assert "only with --publish" in capsys.readouterr().err


def test_a_run_with_no_step_yet_is_published_not_a_traceback(tmp_path):
  """A sweep's run that has just started (no slot completed) is read by
  `crsec report` while the sweep goes on: it once raised KeyError 'flags'."""
  done = synthetic_run(tmp_path / "done", seed=1, steps=6)
  started = synthetic_run(tmp_path / "started", seed=2, steps=0)
  out = tmp_path / "results"
  assert cli.main(["report", "--publish", str(out), str(done),
                   str(started)]) == 0
  runs = json.loads((out / "results.json").read_text())["runs"]
  assert sorted(r["steps_completed"] for r in runs) == [0, 6]


def test_the_measured_error_is_shown_beside_the_estimates():
  """Per target and measure, the labelled counts the corrected estimates
  undo, from the first run that has them (a baseline has no belief)."""
  def run(correction):
    return SimpleNamespace(summary={"correction": {"targets": correction}})
  rates = {"tp": 3, "fp": 0, "fn": 1, "tn": 42, "sensitivity": 0.75,
           "specificity": 1.0, "source": "referee on 46 probe cases"}
  matcher = {"tp": 15, "fp": 2, "fn": 9, "tn": 92, "sensitivity": 0.625,
             "specificity": 0.9787, "source": "norm matcher, test half"}
  baseline = run({"quiet": {"belief": {"rates": None},
                            "behaviour": {"rates": rates}}})
  normative = run({"quiet": {"belief": {"rates": matcher},
                             "behaviour": {"rates": {**rates, "tp": 99}}}})
  group = publish.RunGroup(("venue", "", ""), {"baseline": [baseline],
                                            "normative": [normative]})
  errors = publish.measurement_error(group)
  assert [(e["target"], e["measure"], e["tp"]) for e in errors] == [
      ("quiet", "belief", 15), ("quiet", "behaviour", 3)]
  text = "\n".join(publish._error_markdown(errors))  # pylint: disable=protected-access
  assert "| quiet | belief | 0.62 (15/24) | 0.98 (92/94) |" in text
  assert "| quiet | behaviour | 0.75 (3/4) | 1.00 (42/42) |" in text
  assert publish._error_markdown([]) == []  # pylint: disable=protected-access


def test_the_model_paragraph_follows_the_runs_model():
  """The embedded 1.5B model's limits are said of its runs only; runs on
  another endpoint name their model instead."""
  def group(*models):
    runs = [SimpleNamespace(run=SimpleNamespace(run={"model": m}))
            for m in models]
    return publish.RunGroup(("venue", "", ""), {"normative": runs})
  embedded = {"endpoint": "embedded", "model": "qwen2.5-coder-1.5b"}
  vllm = {"endpoint": "http://gpu:8000/v1", "model": "Qwen/Qwen2.5-7B"}
  assert "1.5B" in publish.model_paragraph([group(embedded)])
  text = publish.model_paragraph([group(embedded, vllm)])
  assert "What a 1.5B model" not in text
  assert "`Qwen/Qwen2.5-7B`" in text and "`qwen2.5-coder-1.5b`" in text


def test_the_researchers_notes_stand_on_the_page(tmp_path, capsys):
  """--notes puts a reading of the runs on the published page, after the
  model paragraph and before the groups; without --publish it is refused."""
  notes = tmp_path / "reading.md"
  notes.write_text("The matcher reads *not* poorly here.\n", encoding="utf-8")
  out = tmp_path / "results"
  cmp = compare_dir(tmp_path / "cmp")
  assert cli.main(["report", "--publish", str(out), "--notes", str(notes),
                   str(cmp)]) == 0
  readme = (out / "README.md").read_text(encoding="utf-8")
  reading = readme.index("## The researcher's reading\n\nThe matcher reads "
                         "*not* poorly here.")
  assert readme.index("**Models.**") < reading < readme.index(
      "## hobbs_cafe_synthetic")
  assert cli.main(["report", "--notes", str(notes), str(cmp)]) == 2
  assert "--notes goes with --publish" in capsys.readouterr().err
  assert cli.main(["report", "--publish", str(out), "--notes",
                   str(tmp_path / "none.md"), str(cmp)]) == 2
  assert "cannot be read" in capsys.readouterr().err
