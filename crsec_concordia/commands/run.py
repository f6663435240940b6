"""`crsec run`: play one episode of a scenario into a new run directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from crsec_concordia import outputs, runner
from crsec_concordia.calibration import run_policy
from crsec_concordia.commands.flags import (add_budget_flags,
                                            add_embedder_flag,
                                            add_endpoint_flags,
                                            add_estimate_flags,
                                            add_models_flags,
                                            add_batched_flag,
                                            add_policy_flag,
                                            add_progress_flag,
                                            add_stated_belief_flag,
                                            budget_from,
                                            embedder_from, endpoint_from,
                                            models_spec_from, positive)
from crsec_concordia.endings import RunEnded
from crsec_concordia.runs import estimate, model_roles
from crsec_concordia.runs.episode import default_run_dir


def add_parser(sub) -> None:
  p = sub.add_parser(
      "run", help="play one episode (default: the built-in mini café)",
      description="Play one episode of a scenario and write its run "
      "directory as it goes; an interrupted run continues with `crsec "
      "resume RUN_DIR`.")
  p.add_argument("scenario", nargs="?", default=runner.DEFAULT_SCENARIO,
                 help="a scenario .yaml file or a built-in name (default: "
                 f"{runner.DEFAULT_SCENARIO})")
  p.add_argument("--agents", choices=runner.ARMS, default="normative",
                 help="CRSEC agents or the same agents without CRSEC "
                 "(default: normative)")
  p.add_argument("--seed", type=int, default=1, help="run seed (default: 1)")
  p.add_argument("--steps", type=positive("--steps"),
                 help="play this many steps instead of the scenario's length")
  p.add_argument("--out", type=Path, help="the run directory (default: "
                 "runs/<scenario>-<agents>-seed<N>-<UTC time>)")
  p.add_argument("--no-cache", action="store_true",
                 help="do not replay model answers from the response cache")
  add_progress_flag(p)
  add_stated_belief_flag(p)
  add_policy_flag(p, run_policy.DEFAULT)
  add_batched_flag(p)
  add_embedder_flag(p)
  add_endpoint_flags(p)
  add_models_flags(p)
  add_budget_flags(p)
  add_estimate_flags(p)
  p.set_defaults(func=run)


def print_summary(run_dir: Path) -> None:
  """The run directory and what happened in it, in a few lines."""
  s = runner.summarize(run_dir)
  totals = s["usage"]["totals"]
  minutes, seconds = divmod(int(round(s["wall_seconds"] or 0)), 60)
  print(f"run directory: {s['run_dir']}")
  print(f"  {s['status']}: {s['steps']}/{s['max_steps']} steps in "
        f"{minutes}m{seconds:02d}s")
  estimated = f" ({s['tokens']})" if s["tokens"] else ""
  print(f"  model: {totals['calls']} calls (+{totals['cached_calls']} cached, "
        f"{totals['failed_calls']} failed), {totals['prompt_tokens']} prompt + "
        f"{totals['completion_tokens']} completion tokens{estimated}")
  if totals.get("prompt_tokens") and not estimated:
    print(f"  prompt tokens the server reused from its cache: "
          f"{totals.get('reused_prompt_tokens', 0)} of "
          f"{totals['prompt_tokens']}")
  costs = s["per_agent_hour"]
  if costs:
    total = costs.pop("total")
    print(f"  per agent and simulated hour: {total['calls']:.1f} calls, "
          f"{total['tokens']:.0f} tokens{estimated} ("
          + ", ".join(f"{tag} {c['calls']:.1f}" for tag, c in costs.items())
          + ")")
  apart = s["apart"]
  if apart["calls"] or apart["cached_calls"]:
    print(f"  apart from the simulation (the agents' stated rules): "
          f"{apart['calls']} calls (+{apart['cached_calls']} cached, "
          f"{apart['failed_calls']} failed), {apart['prompt_tokens']} prompt "
          f"+ {apart['completion_tokens']} completion tokens")
  behaviours = ", ".join(f"{b} {n}" for b, n in s["behaviours"].items())
  print(f"  events by behaviour: {behaviours or 'none'}")
  policy = s["referee_policy"]
  if policy:
    print(f"  referee policy: {policy['source']}; structures: "
          f"{', '.join(policy['structures']) or 'none'}")
  for what, key in (("referee", "referee_batched"),
                    ("DetectConflict", "conflicts_batched")):
    batched = s[key]
    if batched:
      how = ("a place's slot asked together" if batched["on"]
             else "one at a time")
      print(f"  {what}: {how} ({batched['source']})")
  checks = s["referee"]
  if any(checks.values()):
    print(f"  referee: {checks['spared']} actions not put to it (far from "
          f"every behaviour); tags kept apart: {checks['far_tags']} far from "
          f"the action, {checks['not_by_actor']} not the actor's; second "
          f"looks where no tag counted: {checks['looks']}, "
          f"{checks['looked_tags']} of them tagged")
  records = s["records"]
  print(f"  conversations: {records.get('conversation', 0)}; conflicts: "
        f"{records.get('conflict', 0)}; failures: {records.get('failure', 0)}")
  if s["actions"]:
    written = s["actions"] - s["continued"]
    went_on = s["act_reasons"].get("went on", 0)
    ahead = s["act_reasons"].get("written ahead", 0)
    print(f"  actions: {s['actions']}, of them {s['continued'] - went_on} "
          "going on from an earlier slot with no model call, "
          + (f"{went_on} going on by the agent's choice when asked, "
             if went_on else "") + f"{written} newly written"
          + (f" ({ahead} of them written the slot before, with an "
             "occasion's answer)" if ahead else ""))
    if s["act_reasons"]:
      print("  why act calls were made: " + ", ".join(
          f"{r} {n}" for r, n in s["act_reasons"].items()
          if r not in ("continued", "written ahead")))
    if written:
      print(f"  new actions without one of the agent's own (copies, failed "
            f"answers): {s['no_action']} of {written} "
            f"({s['no_action'] / written:.0%})")
      print(f"  new actions that repeat the agent's previous one word for "
            f"word: {s['repeated']} of {written} "
            f"({s['repeated'] / written:.0%})")
  print(f"  watch it: crsec view {s['run_dir']} --serve (also while a run "
        "goes, from another terminal: the page follows it slot by slot)")


def run(args: argparse.Namespace) -> int:
  # The scenario is loaded (and a malformed one reported) before anything
  # is created; the run directory is made and test-written before the
  # model starts, and removed again if the run fails before writing in it.
  scenario = runner.load(args.scenario)
  if args.estimate:
    for line in estimate.lines([estimate.of_scenario(scenario, args.agents,
                                                  args.steps)],
                               args.price_in, args.price_out):
      print(line)
    return 0
  models = models_spec_from(args)
  model_roles.check_spec(model_roles.spec_of(models, scenario), scenario)
  embedder = embedder_from(args)
  out = args.out or default_run_dir(scenario, args.agents, args.seed)
  with outputs.new_dir(out, "--out"), outputs.writing(
      out, then=f"make room there, then `crsec resume {out}` continues"):
    try:
      run_dir = runner.run_episode(
          scenario, arm=args.agents, seed=args.seed, out_dir=out,
          endpoint=endpoint_from(args), steps=args.steps,
          cache=not args.no_cache, progress=not args.no_progress,
          referee_policy=args.referee_policy,
          referee_batched=args.referee_batched,
          conflicts_batched=args.conflicts_batched, embedder=embedder,
          models=models, budget=budget_from(args),
          stated_belief=args.stated_belief,
          outage_wait=args.outage_wait)
    except RunEnded:
      print_summary(out)  # What it did before it stopped.
      raise
  print_summary(run_dir)
  return 0
