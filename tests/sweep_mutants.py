"""Malformed sweep files, for tests/test_sweep_fuzz.py and
bench/scenario_fuzz.py: the scenario fuzzing's generator (tests/yaml_fuzz.py)
on a sweep file that uses every field, plus what only a sweep can get wrong
(seeds, the grid, conditions that break the scenario they modify, endpoints,
exclude rules). tests/scenario_mutants.py judges them: `crsec sweep FILE`
must exit 2 with one `FILE:LINE: field: problem; fix` line per problem, no
traceback, no sweep directory, and neither Ray nor a model started.
"""

from __future__ import annotations

import dataclasses

from crsec_concordia.sweeps.spec import SweepFile
from tests.yaml_fuzz import Mutant, edited, schema_mutants, syntax_mutants

# A valid sweep that sets every field once (api_key_env aside: it must name
# a variable that is set), so that every field gets its schema mutants.
BASE = """\
name: fuzz_base
scenarios: [hobbs_cafe_mini]
seeds: [1, 2]
arms: [normative, baseline]
steps: 2
conditions:
  full: {description: every module on}
  no_talk:
    description: no communication, short talks
    crsec: {modules: {communication: false}}
    scenario: {conversation: {max_rounds: 1}, agents: {Tom Gomez: {goal: tip well}}}
reference: full
endpoints:
  a: {base_url: "http://127.0.0.1:9/v1", model: m, schema_mode: json_object, timeout: 30, max_concurrent_runs: 2}
exclude:
  - {scenario: hobbs_cafe_mini, condition: no_talk, endpoint: a, arm: baseline, seed: 2}
resources: {num_cpus: 1, memory_gb: 2, custom: {gpu_slot: 1}}
retries: 1
cache: true
"""
ENDPOINT = ('a: {base_url: "http://127.0.0.1:9/v1", model: m, schema_mode: '
            'json_object, timeout: 30, max_concurrent_runs: 2}')
RULE = ("{scenario: hobbs_cafe_mini, condition: no_talk, endpoint: a, "
        "arm: baseline, seed: 2}")
UNSET = "NO_SUCH_VARIABLE_CRSEC_SWEEP_FUZZ"


def _base(name: str, old: str, new: str, where: str | None) -> Mutant:
  return edited(BASE, f"sweep: {name}", old, new, where)


def _endpoint(name: str, old: str, new: str, where: str) -> Mutant:
  assert old in ENDPOINT, old
  return _base(name, ENDPOINT, ENDPOINT.replace(old, new), where)


def _rule(name: str, old: str, new: str, where: str) -> Mutant:
  assert old in RULE, old
  return _base(name, RULE, RULE.replace(old, new), where)


def semantic_mutants() -> list[Mutant]:
  """What only a sweep can get wrong."""
  talk = "no_talk"
  override = f"conditions.{talk}.scenario"
  return [
      _base("seeds backwards", "seeds: [1, 2]", "seeds: 2-1", "seeds"),
      _base("a seed twice", "seeds: [1, 2]", "seeds: [1, 1]", "seeds"),
      _base("seeds in words", "seeds: [1, 2]", "seeds: first three", "seeds"),
      _base("an empty list of seeds", "seeds: [1, 2]", "seeds: []", "seeds"),
      _base("more than 10000 seeds", "seeds: [1, 2]", "seeds: 1-20000",
            "seeds"),
      _base("a seed of 40 digits", "seeds: [1, 2]", "seeds: 1-" + "9" * 40,
            "seeds"),
      _base("a negative seed", "seeds: [1, 2]", "seeds: [-1, 2]", "seeds"),
      _base("seeds as true", "seeds: [1, 2]", "seeds: true", "seeds"),
      _base("an unknown built-in scenario", "scenarios: [hobbs_cafe_mini]",
            "scenarios: [hobbs_cafe_maxi]", "scenarios[0]"),
      _base("a scenario file that is not there", "scenarios: [hobbs_cafe_mini]",
            "scenarios: [nowhere/cafe.yaml]", "scenarios[0]"),
      _base("a scenario named twice", "scenarios: [hobbs_cafe_mini]",
            "scenarios: [hobbs_cafe_mini, hobbs_cafe_mini]", "scenarios[1]"),
      _base("no scenarios", "scenarios: [hobbs_cafe_mini]", "scenarios: []",
            "scenarios"),
      _base("an unknown arm", "arms: [normative, baseline]",
            "arms: [normative, control]", "arms[1]"),
      _base("no arms", "arms: [normative, baseline]", "arms: []", "arms"),
      _base("steps beyond the clock", "steps: 2", "steps: 40", "steps"),
      _base("zero steps", "steps: 2", "steps: 0", "steps"),
      _base("a condition name with spaces", "  no_talk:", "  No Talk:",
            "conditions.No Talk"),
      _base("a misspelt module in a condition", "communication: false",
            "comunication: false",
            f"conditions.{talk}.crsec.modules.comunication"),
      _base("a module switch that is not a boolean", "communication: false",
            "communication: sometimes",
            f"conditions.{talk}.crsec.modules.communication"),
      _base("a synthesis threshold of zero in a condition",
            "crsec: {modules: {communication: false}}",
            "crsec: {modules: {communication: false}, synthesis_threshold: 0}",
            f"conditions.{talk}.crsec.synthesis_threshold"),
      _base("an unknown crsec key in a condition",
            "crsec: {modules: {communication: false}}",
            "crsec: {modules: {communication: false}, reflect_evry: 3}",
            f"conditions.{talk}.crsec.reflect_evry"),
      _base("a billion conversation rounds in a condition", "max_rounds: 1",
            "max_rounds: 1000000000", f"{override}.conversation.max_rounds"),
      _base("a misspelt scenario key in a condition",
            "scenario: {conversation:", "scenario: {conversaton:",
            f"{override}.conversaton"),
      _base("a condition for an agent who is not there", "Tom Gomez: {goal",
            "Tom Gomes: {goal", f"{override}.agents.Tom Gomes"),
      _base("a condition giving an agent an unknown key", "{goal: tip well}",
            "{goal: tip well, mood: cheerful}",
            f"{override}.agents[2].mood"),
      _base("a condition that empties the agents", "agents: {Tom Gomez: "
            "{goal: tip well}}", "agents: []", f"{override}.agents"),
      _base("a condition opening at 25:00", "scenario: {conversation:",
            'scenario: {clock: {start: "25:00"}, conversation:',
            f"{override}.clock.start"),
      _base("a condition whose clock ends before the steps",
            "scenario: {conversation:",
            'scenario: {clock: {end: "09:15"}, conversation:', "steps"),
      _base("a reference that is not a condition", "reference: full",
            "reference: ful", "reference"),
      _base("a reference that is no name", "reference: full",
            "reference: Full Set", "reference"),
      _endpoint("an endpoint without a model", "model: m, ", "",
                "endpoints.a.base_url"),
      _endpoint("a model without a base_url",
                'base_url: "http://127.0.0.1:9/v1", ', "", "endpoints.a"),
      _endpoint("an api_key_env that is not set", "model: m,",
                f"model: m, api_key_env: {UNSET},", "endpoints.a.api_key_env"),
      _endpoint("an unknown schema mode", "json_object", "xml",
                "endpoints.a.schema_mode"),
      _endpoint("a zero timeout", "timeout: 30", "timeout: 0",
                "endpoints.a.timeout"),
      _endpoint("a timeout of a week", "timeout: 30", "timeout: 604800",
                "endpoints.a.timeout"),
      _endpoint("no runs at once", "max_concurrent_runs: 2",
                "max_concurrent_runs: 0", "endpoints.a.max_concurrent_runs"),
      _endpoint("a base_url on two lines", '"http://127.0.0.1:9/v1"',
                '"http://127.0.0.1:9/v1\\nhttp://other/v1"',
                "endpoints.a.base_url"),
      _base("an endpoint name with a dash", "  a: {base_url", "  A-1: {base_url",
            "endpoints.A-1"),
      _rule("an exclude rule for an unknown condition", "condition: no_talk",
            "condition: no_tak", "exclude[0].condition"),
      _rule("an exclude rule for an unknown arm", "arm: baseline",
            "arm: control", "exclude[0].arm"),
      _rule("an exclude rule for a seed not swept", "seed: 2", "seed: 7",
            "exclude[0].seed"),
      _rule("an exclude rule for an unknown endpoint", "endpoint: a",
            "endpoint: b", "exclude[0].endpoint"),
      _rule("an exclude rule for an unknown scenario",
            "scenario: hobbs_cafe_mini", "scenario: hobbs_cafe",
            "exclude[0].scenario"),
      _base("an exclude rule naming nothing", RULE, "{}", "exclude[0]"),
      _base("every run excluded", f"  - {RULE}\n",
            "  - {arm: normative}\n  - {arm: baseline}\n", "(top level)"),
      _base("zero CPUs a run", "num_cpus: 1", "num_cpus: 0",
            "resources.num_cpus"),
      _base("negative CPUs a run", "num_cpus: 1", "num_cpus: -2",
            "resources.num_cpus"),
      _base("a petabyte of memory a run", "memory_gb: 2",
            "memory_gb: 1000000000", "resources.memory_gb"),
      _base("a custom resource of zero", "gpu_slot: 1", "gpu_slot: 0",
            "resources.custom.gpu_slot"),
      _base("nine retries", "retries: 1", "retries: 9", "retries"),
      _base("negative retries", "retries: 1", "retries: -1", "retries"),
      _base("cache as sometimes", "cache: true", "cache: sometimes", "cache"),
      _base("a name that climbs directories", "name: fuzz_base",
            "name: ../../escaped", "name"),
      _base("a name of 300 characters", "name: fuzz_base",
            "name: " + "x" * 300, "name"),
      Mutant("sweep: a grid of 120000 runs", (
          "scenarios: [hobbs_cafe_mini]\nseeds: 1-10000\nconditions: "
          "{a: {}, b: {}, c: {}, d: {}, e: {}, f: {}}\n").encode(),
             "(top level)"),
  ]


def all_mutants() -> list[Mutant]:
  """Every malformed sweep file: file-level, field-level and semantic.

  The file-level and field-level ones come from yaml_fuzz, named `sweep:
  ...` so that they never clash with the scenarios' in a report. Seeds are
  read whole ("1-3", or a list), so an item of the wrong type in the list
  is an error on `seeds`.
  """
  generic = [dataclasses.replace(m, name=f"sweep: {m.name}")
             for m in syntax_mutants(BASE) + schema_mutants(BASE, SweepFile)]
  generic = [dataclasses.replace(m, where="seeds") if m.where == "seeds[0]"
             else m for m in generic]
  mutants = generic + semantic_mutants()
  names = [m.name for m in mutants]
  assert len(names) == len(set(names)), "mutant names must be unique"
  return mutants
