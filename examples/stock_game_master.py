"""CRSEC agents under Concordia's stock game master, on a plain LanguageModel.

For a Concordia user who has their own game master and engine: two of our
`normative__Entity` agents and one `baseline__Entity` are played by
Concordia's stock generic game master (`concordia.prefabs.game_master.
generic`) and its stock sequential engine, through Concordia's own
`Simulation` prefab. Nothing of this project's game master is used.

One plain Concordia `LanguageModel` (text and choices only, no JSON schema)
drives both sides: the stock game master calls it as it calls any model,
and our prefabs wrap it in `ConcordiaModelAdapter`, which states each CRSEC
operation's schema in the prompt and validates the answer. Here that model
is the embedded local model (or `--base-url/--model`) seen through
Concordia's interface only; any other Concordia model works the same way.

The stock game master narrates in free text, not in this project's exact
observation format: our components read who did what from it with one
ReadEvents call per distinct text (components/_free_text.py).

What the stock game master asks the model, and what this example changes:
  - whether to end the episode and which action spec to use, every step.
    A weak model ends episodes at random and may write an action spec that
    is not JSON, which crashes the engine; so by default Concordia's own
    `NeverTerminate` and `FixedActionSpec` answer them, through the stock
    prefab's `extra_components` param (`--llm-turns` keeps the model's).
    The turn order is the prefab's 'fixed' one (one agent acts per step).
  - a summary of its memories on every one of its acts (AllSimilarMemories),
    and up to 1,500 tokens per narration. On 2 CPU cores that is a minute a
    call, so the plain model caps every answer at `--max-tokens`.
Its calls are counted by the engine's question they answer; the agents'
by CRSEC operation.

Run: .venv/bin/python examples/stock_game_master.py [--steps 3] [--seed 1]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from concordia.components.game_master import next_acting, terminate
from concordia.language_model import language_model
from concordia.prefabs.game_master import generic as generic_game_master
from concordia.prefabs.simulation import generic as simulation_lib
from concordia.typing import entity as entity_lib
from concordia.typing import prefab as prefab_lib

from crsec_concordia.components import NORM_MEMORY_KEY
from crsec_concordia.components.port import port_of
from crsec_concordia.models.base import StructuredLanguageModel
from crsec_concordia.models.concordia_adapter import as_structured
from crsec_concordia.prefabs import PREFABS

# The scene is data: the code names no venue. A conflict is likely: one
# person smokes where he sits, another cannot stand smoke indoors.
SCENE: dict[str, Any] = {
    "setting": "Hobbs Cafe, a small café with one room and six tables",
    "premise": (
        "It is a quiet weekday morning at Hobbs Cafe, a small café with one "
        "room and six tables. Carlos Gomez sits at the corner table with his "
        "notebook and a pack of cigarettes. Isabella Rodriguez runs the "
        "counter. Tom Moreno reads by the window."),
    "people": [
        {"prefab": "baseline__Entity", "name": "Carlos Gomez",
         "persona": ("Carlos, 35, a poet, writes at the corner table every "
                     "morning and lights a cigarette whenever he writes; he "
                     "has always smoked wherever he sits."),
         "goal": "finish the poem he started yesterday"},
        {"prefab": "normative__Entity", "name": "Isabella Rodriguez",
         "role": "entrepreneur", "initial_norm_count": 3,
         "persona": ("Isabella, 28, runs the counter; she cannot stand "
                     "cigarette smoke indoors and wants the room calm and "
                     "clean for her customers."),
         "goal": "keep her customers comfortable"},
        {"prefab": "normative__Entity", "name": "Tom Moreno",
         "role": "ordinary", "reflect_every": 1,
         "persona": ("Tom, 22, a student, reads by the window most mornings "
                     "and goes along with what the people around him "
                     "expect."),
         "goal": "read two chapters of his textbook"},
    ],
}
GAME_MASTER = "generic__GameMaster"


class PlainLanguageModel(language_model.LanguageModel):
  """A structured model (the embedded one, an endpoint) seen only through
  Concordia's interface: text and choices, no `sample_json`, so our prefabs
  serve it through the adapter as they would any Concordia model.

  Its calls are counted under `tag` in the wrapped model's usage (which
  has the server's token counts) and every answer is capped at
  `max_tokens`: the stock game master asks for up to 1,500.
  """

  def __init__(self, model: StructuredLanguageModel, tag: str,
               max_tokens: int = 300):
    self._model = model.tagged(tag)
    self._max_tokens = max_tokens

  def sample_text(self, prompt: str, **kwargs: Any) -> str:
    kwargs["max_tokens"] = min(kwargs.get(
        "max_tokens", language_model.DEFAULT_MAX_TOKENS), self._max_tokens)
    return self._model.sample_text(prompt, **kwargs)

  def sample_choice(self, prompt: str, responses: Sequence[str], *,
                    seed: int | None = None
                    ) -> tuple[int, str, Mapping[str, Any]]:
    return self._model.sample_choice(prompt, responses, seed=seed)


class QuestionCounter(language_model.LanguageModel):
  """Any Concordia LanguageModel, its calls counted by the engine question
  (terminate, make_observation, resolve, ...) the game master was answering.

  `watch(game_master)` notes the question of each of its acts. The stock
  engine asks one question at a time, except the observations, which it
  asks for all entities at once: the same question, so the count holds.
  """

  def __init__(self, model: language_model.LanguageModel):
    self._model = model
    self._lock = threading.Lock()
    self._asking = "other"
    self.calls: collections.Counter[str] = collections.Counter()

  def watch(self, game_master: Any) -> None:
    act = game_master.act

    def counted_act(action_spec: entity_lib.ActionSpec =
                    entity_lib.DEFAULT_ACTION_SPEC) -> str:
      with self._lock:
        self._asking = action_spec.output_type.name.lower()
      return act(action_spec)

    game_master.act = counted_act

  def _count(self) -> None:
    with self._lock:
      self.calls[self._asking] += 1

  def sample_text(self, prompt: str, **kwargs: Any) -> str:
    self._count()
    return self._model.sample_text(prompt, **kwargs)

  def sample_choice(self, prompt: str, responses: Sequence[str], *,
                    seed: int | None = None
                    ) -> tuple[int, str, Mapping[str, Any]]:
    self._count()
    return self._model.sample_choice(prompt, responses, seed=seed)


def build_config(scene: Mapping[str, Any], *, steps: int,
                 llm_turns: bool = False) -> prefab_lib.Config:
  """A Concordia config: our prefabs for the people, the stock generic game
  master (turns in fixed order) for the rest."""
  extra: dict[str, Any] = {}
  if not llm_turns:
    # Concordia's own components, under the keys the stock act reads.
    extra = {
        terminate.DEFAULT_TERMINATE_COMPONENT_KEY: terminate.NeverTerminate(),
        next_acting.DEFAULT_NEXT_ACTION_SPEC_COMPONENT_KEY:
            next_acting.FixedActionSpec(entity_lib.free_action_spec(
                call_to_action=entity_lib.DEFAULT_CALL_TO_ACTION)),
    }
  people = [prefab_lib.InstanceConfig(
      prefab=p["prefab"], role=prefab_lib.Role.ENTITY,
      params={"setting": scene["setting"],
              **{k: v for k, v in p.items() if k != "prefab"}})
            for p in scene["people"]]
  game_master = prefab_lib.InstanceConfig(
      prefab=GAME_MASTER, role=prefab_lib.Role.GAME_MASTER,
      params={"name": "game master", "acting_order": "fixed",
              "extra_event_resolution_steps": "", "extra_components": extra})
  return prefab_lib.Config(
      prefabs={**PREFABS, GAME_MASTER: generic_game_master.GameMaster()},
      instances=[*people, game_master], default_premise=scene["premise"],
      default_max_steps=steps)


@dataclasses.dataclass
class Outcome:
  """What a run did: actions, each agent's CRSEC findings, model calls."""
  actions: list[str]
  findings: dict[str, dict[str, Any]]
  game_master_calls: dict[str, int]
  agent_calls: dict[str, int]
  wall_seconds: float


def findings_of(agent: Any) -> dict[str, Any]:
  """An agent's CRSEC work, as its port hands it over (a talk it decided
  on is a `talk_decision`: the stock game master holds none, and
  ConflictDetector makes the conflict a reason for its next act instead);
  a baseline agent, which keeps no norms, has none."""
  port = port_of(agent)
  if port.norm_snapshot() is None:
    return {"crsec": False}
  records = port.drain_records()
  verdicts = {r["norm_id"]: r for r in records if r["kind"] == "verdict"}

  def of(kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] == kind]

  return {
      "crsec": True, "role": agent.get_component(NORM_MEMORY_KEY).role,
      "created": of("created"),
      "conflicts": of("conflict"),
      "identified": [dict(r, verdict=verdicts.get(r["norm_id"]))
                     for r in of("candidate")],
      "talk_requests": [r for r in of("talk_decision") if r.get("talk")],
      "failures": of("failure"),
      "holds": port.held_norms()}


def run_example(model: language_model.LanguageModel,
                embedder: Callable[[str], np.ndarray], *,
                scene: Mapping[str, Any] = SCENE, steps: int = 3,
                llm_turns: bool = False,
                game_master_model: language_model.LanguageModel | None = None,
                echo: Callable[[str], None] = print) -> Outcome:
  """Plays `scene` for `steps` with the stock game master and engine.

  `model` serves the agents (through the adapter) and, unless
  `game_master_model` is given, the game master too.
  """
  counter = QuestionCounter(game_master_model or model)
  simulation = simulation_lib.Simulation(
      build_config(scene, steps=steps, llm_turns=llm_turns), model, embedder,
      override_game_master_model=counter)
  for game_master in simulation.get_game_masters():
    counter.watch(game_master)
  actions: list[str] = []

  def on_step(data: Any) -> None:
    actions.append(f"step {data.step}: {data.action}")
    echo(f"== {actions[-1]}")

  start = time.monotonic()
  simulation.play(max_steps=steps, step_callback=on_step)
  wall = time.monotonic() - start
  return Outcome(
      actions=actions,
      findings={a.name: findings_of(a) for a in simulation.get_entities()},
      game_master_calls=dict(counter.calls),
      agent_calls={tag: u["calls"] + u["failed_calls"] for tag, u in
                   as_structured(model).usage.by_tag().items()},
      wall_seconds=wall)


def _norm(record: Mapping[str, Any]) -> str:
  return f"\"{record['content']}\" ({record['type']}, {record['utility']})"


def _verdict(record: Mapping[str, Any]) -> str:
  verdict = record.get("verdict")
  if verdict is None:
    return "not yet evaluated"
  if verdict["accepted"]:
    return "accepted"
  return f"rejected: {verdict['reason']}"


def summarize(outcome: Outcome,
              tokens: Mapping[str, Mapping[str, int]] | None = None) -> str:
  """The run in a few lines a person reads: per agent the norms created,
  conflicts detected and norms identified; then time, calls and tokens."""
  lines = ["", "== Summary", *outcome.actions]
  for name, f in outcome.findings.items():
    if not f["crsec"]:
      lines.append(f"{name} (baseline, no CRSEC components)")
      continue
    lines.append(f"{name} (normative, {f['role']})")
    lines.append(f"  norms created: {len(f['created'])}")
    lines += [f"    {_norm(r)}" for r in f["created"]]
    lines.append(f"  conflicts detected: {len(f['conflicts'])}")
    lines += [f"    {r['actor']}: \"{r['behaviour']}\" ({r['place']}) breaks "
              f"\"{r['norm']}\"" for r in f["conflicts"]]
    lines.append(f"  norms identified: {len(f['identified'])}")
    lines += [f"    {_norm(r)} from {r['origin']}: {_verdict(r)}"
              for r in f["identified"]]
    if f["talk_requests"]:
      lines.append("  talks asked for (the stock game master holds none):")
      lines += [f"    with {t['actor']} about \"{t['norm']}\""
                for t in f["talk_requests"]]
    if f["failures"]:
      lines.append(f"  failed calls recorded: {len(f['failures'])} ("
                   + ", ".join(sorted({r['op'] for r in f['failures']}))
                   + ")")
    lines.append("  holds now: " + (", ".join(f'"{n}"' for n in f["holds"])
                                    or "no norms"))
  gm, agents = outcome.game_master_calls, outcome.agent_calls
  lines.append(f"wall time: {outcome.wall_seconds:.1f} s")
  lines.append(f"model calls: {sum(gm.values()) + sum(agents.values())} "
               f"(game master {sum(gm.values())}, agents "
               f"{sum(agents.values())})")
  lines.append("  game master by question: " + ", ".join(
      f"{k} {v}" for k, v in sorted(gm.items())))
  lines.append("  agents by operation: " + ", ".join(
      f"{k} {v}" for k, v in sorted(agents.items())))
  if tokens:
    for side, u in sorted(tokens.items()):
      lines.append(f"  tokens, {side}: {u['prompt_tokens']} prompt, "
                   f"{u['completion_tokens']} completion")
  else:
    lines.append("  tokens: not reported by this model")
  return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--steps", type=int, default=3,
                 help="engine steps; one agent acts per step (default 3)")
  p.add_argument("--seed", type=int, default=1, help="run seed (default 1)")
  p.add_argument("--base-url", help="an OpenAI-compatible endpoint instead "
                 "of the embedded model (or CRSEC_BASE_URL)")
  p.add_argument("--model", help="the endpoint's model name (or CRSEC_MODEL)")
  p.add_argument("--max-tokens", type=int, default=300,
                 help="cap on every answer's length (default 300)")
  p.add_argument("--llm-turns", action="store_true",
                 help="let the model decide termination and action specs, "
                 "as the stock game master does")
  p.add_argument("--scene", help="a JSON file shaped like SCENE (setting, "
                 "premise, people) instead of the café")
  return p


def main(argv: Sequence[str] | None = None) -> int:
  args = _parser().parse_args(argv)
  # Imported here: the test imports this module without starting a model.
  from crsec_concordia.embedding import shared_embedder  # pylint: disable=import-outside-toplevel
  from crsec_concordia.models import EndpointConfig, make_model  # pylint: disable=import-outside-toplevel
  scene = SCENE
  if args.scene:
    with open(args.scene, encoding="utf-8") as f:
      scene = json.load(f)
  config = EndpointConfig.resolve(base_url=args.base_url, model=args.model)
  base = make_model(config, seed=args.seed,
                    progress=lambda m: print(f"  {m}", flush=True))
  print(f"model: {config.describe()}", flush=True)
  outcome = run_example(
      PlainLanguageModel(base, "agents", args.max_tokens), shared_embedder(),
      scene=scene, steps=args.steps, llm_turns=args.llm_turns,
      game_master_model=PlainLanguageModel(base, "game master",
                                           args.max_tokens))
  print(summarize(outcome, tokens=base.usage.by_tag()), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
