"""The HTML pages come from autoescaped, strict Jinja2 templates
(metrics/present/templating.py): markup in what agents and scenario authors
wrote is shown as text, and a template asking for a value nobody gave fails
loudly."""

from __future__ import annotations

import copy
from pathlib import Path

import jinja2
import pytest

from crsec_concordia.metrics.present import questionnaire, report
from crsec_concordia.metrics.present import templating
from tests.metrics_fixtures import ABIGAIL, SCENARIO, RunBuilder

SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
AGENT = f"Eve {SCRIPT}"
NORM = f"No smoking {SCRIPT}"
SCENARIO_NAME = f"cafe {SCRIPT}"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, embedder) -> Path:
  """A run whose scenario name, target norm, one agent's name and the norms
  it holds all carry a script tag."""
  del embedder  # Loaded once per session, used by the report's matcher.
  scenario = copy.deepcopy(SCENARIO)
  scenario["name"] = SCENARIO_NAME
  scenario["agents"] = scenario["agents"][:2] + [
      {"name": AGENT, "role": "ordinary", "persona": "p", "preferences": {}}]
  scenario["target_norms"][0]["text"] = NORM
  b = RunBuilder(tmp_path_factory.mktemp("hostile") / "run", steps=3,
                 scenario=scenario)
  b.hold(1, ABIGAIL, NORM, origin="created")
  b.action(1, AGENT, ["smoking_indoors"], f"{AGENT} lights up")
  b.conflict(1, ABIGAIL, AGENT, NORM, "smokes inside", talk=True)
  b.hold(2, AGENT, NORM, source_agent=ABIGAIL, source_text="the talk")
  path = b.write()
  report.run_report(path)
  return path


def pages(run_dir: Path) -> dict[str, str]:
  out = run_dir / "report"
  qdir = out / "questionnaire"
  return {name: path.read_text(encoding="utf-8") for name, path in {
      "report": out / "index.html", "questionnaire": qdir / "index.html",
      "agent": qdir / f"{questionnaire.slug(AGENT)}.html"}.items()}


@pytest.mark.parametrize("text", [AGENT, NORM, SCENARIO_NAME])
def test_script_in_names_and_norms_is_shown_escaped_in_the_report(
    run_dir, text):
  page = pages(run_dir)["report"]
  assert text.replace(SCRIPT, ESCAPED) in page
  assert "<script>alert" not in page


def test_script_in_names_and_norms_is_shown_escaped_in_the_questionnaire(
    run_dir):
  found = pages(run_dir)
  agent, index = found["agent"], found["questionnaire"]
  assert f"<h1>Questionnaire: {AGENT.replace(SCRIPT, ESCAPED)}</h1>" in agent
  assert NORM.replace(SCRIPT, ESCAPED) in agent  # The items' input/output.
  assert AGENT.replace(SCRIPT, ESCAPED) in index
  for page in (agent, index):
    assert "<script>alert" not in page
  # The page's own download script is the only script.
  assert agent.count("<script>") == 1 and index.count("<script>") == 0


def test_every_page_template_refuses_a_missing_variable():
  for name in templating.ENVIRONMENT.list_templates():
    if name.startswith("_"):  # Layouts and macros, not pages.
      continue
    with pytest.raises(jinja2.UndefinedError):
      templating.render(name)


def test_a_missing_attribute_is_an_error_not_an_empty_cell():
  link = templating.Link("summary.json", "../summary.json")
  with pytest.raises(jinja2.UndefinedError):
    templating.ENVIRONMENT.from_string("{{ link.url }}").render(link=link)
  assert templating.ENVIRONMENT.from_string(
      "{{ text }}").render(text=SCRIPT) == ESCAPED
