"""The flags several commands share: the model endpoint, budgets and
outages, estimates, progress, and whole numbers.

Here rather than in cli.py, which imports every command: a command that
reached back into cli.py for them would close an import circle.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crsec_concordia import embedding
from crsec_concordia.calibration import run_policy
from crsec_concordia.embedding import user as user_embedder
from crsec_concordia.errors import UserError
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.models import EndpointConfig, factory
from crsec_concordia.models.config import DEFAULT_IN_FLIGHT
from crsec_concordia.runs import model_roles, outage
from crsec_concordia.runs.budget import Budget, Caps


def add_endpoint_flags(parser: argparse.ArgumentParser) -> None:
  """The flags that point any command at an OpenAI-compatible endpoint."""
  group = parser.add_argument_group(
      "model endpoint (default: the embedded local model)")
  group.add_argument("--base-url", help="OpenAI-compatible base URL, e.g. "
                     "http://localhost:8000/v1 (env CRSEC_BASE_URL)")
  group.add_argument("--api-key", help="API key (env CRSEC_API_KEY)")
  group.add_argument("--model", help="model name the server serves "
                     "(env CRSEC_MODEL)")
  group.add_argument("--schema-mode", choices=("json_schema", "json_object",
                                               "grammar"),
                     help="how schemas reach the server (env CRSEC_SCHEMA_MODE)")
  group.add_argument("--timeout", type=float,
                     help="seconds a request waits for its answer (a "
                          "llama.cpp server whose /slots show its work "
                          "moving is waited for longer)")
  group.add_argument(
      "--max-in-flight", type=int, metavar="N",
      help="requests sent at once at most (env CRSEC_MAX_IN_FLIGHT; "
           "default: the embedded server's slots, else "
           f"{DEFAULT_IN_FLIGHT}); the run's threads are sized by it")
  group.add_argument(
      factory.FACTORY_FLAG, metavar="MODULE:FUNCTION",
      help="your own Concordia LanguageModel instead of an endpoint: a "
      "function of your module (the current directory is searched first) "
      "that returns one; e.g. crsec_concordia.testing:scripted_model_factory"
      " to try the command line with no model (docs/models.md)")


def add_progress_flag(parser: argparse.ArgumentParser) -> None:
  """--no-progress, the same on every long command: no progress bar, line or
  loading message while it works; what it did is printed all the same."""
  parser.add_argument(
      "--no-progress", action="store_true",
      help="no progress bar, progress line or loading messages while it "
      "works (what it did is printed all the same)")


def add_stated_belief_flag(parser: argparse.ArgumentParser) -> None:
  """--stated-belief/--no-stated-belief, the same on run, compare and
  sweep: whether each run asks its agents, before the first slot and after
  the last, what rules people here follow (RUN_DIR/stated_belief.csv)."""
  parser.add_argument(
      "--stated-belief", action=argparse.BooleanOptionalAction, default=True,
      help="ask every agent what rules people here follow before the first "
      "slot and after the last (stated_belief.csv; calls counted apart from "
      "the simulation's; default: on)")


def add_batched_flag(parser: argparse.ArgumentParser) -> None:
  """--referee-batched and --conflicts-batched (each with its --no-), the
  same on run, compare and sweep (calibration/batching.py); neither:
  `auto`."""
  parser.add_argument(
      "--referee-batched", action=argparse.BooleanOptionalAction,
      default=None,
      help="judge the new actions of one place in a slot in one call "
      "(--referee-batched) or each in its own (--no-referee-batched); "
      "default: batched where the model's accuracy batched was measured to "
      "hold on the venue's labelled cases (or, for a venue with none, on "
      "every measured venue's), else per action")
  parser.add_argument(
      "--conflicts-batched", action=argparse.BooleanOptionalAction,
      default=None,
      help="ask the distinct DetectConflict questions of one place in a "
      "slot in one call, or one observer's at a time; default: as "
      "--referee-batched's, from the model's measured accuracy on the "
      "labelled conflict cases")


def progress_printer(args: argparse.Namespace):
  """A model's loading messages on stderr (`make_model(progress=...)`), or
  None with --no-progress."""
  if getattr(args, "no_progress", False):
    return None
  return lambda message: print(f"crsec: {message}", file=sys.stderr)


def add_policy_flag(parser: argparse.ArgumentParser, default: str | None,
                    also: str = "") -> None:
  """--referee-policy (calibration/run_policy.py)."""
  parser.add_argument(
      "--referee-policy", metavar="POLICY", default=default,
      help="which of the referee's structures apply: "
      f"{run_policy.AUTO} (default: every one for the embedded model; for "
      f"an endpoint's or a model factory's, {run_policy.CALIBRATED} if it "
      "was, else "
      f"{run_policy.TRUSTING}), {run_policy.ALL_ON} (every one), "
      f"{run_policy.TRUSTING} (none that can refuse an answer), "
      f"{run_policy.CALIBRATED} (the choice of this model's `crsec "
      f"calibrate`), or a JSON file of switches{also}")


def endpoint_from(args: argparse.Namespace,
                  factory_spec: str | None = None) -> EndpointConfig:
  """The endpoint the flags (and the environment) name; `factory_spec`:
  the model factory to use when --model-factory names none."""
  return EndpointConfig.resolve(args.base_url, args.api_key, args.model,
                                args.schema_mode, args.timeout,
                                args.max_in_flight,
                                args.model_factory or factory_spec)


def model_flag_given(args: argparse.Namespace) -> bool:
  """Whether the flags name the run's model (--base-url, --model-factory)."""
  return bool(args.base_url or args.model_factory)


def endpoint_for_run(args: argparse.Namespace, info: dict) -> EndpointConfig:
  """The model to read or extend a run with: the one the flags name, else
  the model factory its run.json names (imported again; one line naming
  it when it cannot be), else the environment's or the embedded model."""
  if not model_flag_given(args):
    found = EndpointConfig.of_run(info.get("model"))
    if found is not None:
      return endpoint_from(args, found.factory)
  return endpoint_from(args)


def add_embedder_flag(parser: argparse.ArgumentParser) -> None:
  """--embedder module:function (crsec_concordia/embedding/user.py)."""
  parser.add_argument(
      user_embedder.FLAG, metavar="MODULE:FUNCTION",
      help="your own sentence embedder, a function from text to vector "
      "imported from your module (the current directory is searched "
      "first); default all-MiniLM-L6-v2 (the 'embeddings' extra)")


def embedder_from(args: argparse.Namespace):
  """The Embedder value of the function --embedder names (its first
  vectors checked: bad ones are one line before anything is written), or
  None for the default."""
  if not hasattr(args, "embedder_value"):  # Built once per command.
    found = user_embedder.load_optional(getattr(args, "embedder", None))
    args.embedder_value = None if found is None else embedding.of(found)
  return args.embedder_value


def embedder_for_run(args: argparse.Namespace, info: dict):
  """The embedder to read or extend a run with: --embedder's, else the one
  its run.json names (imported again; one line naming it when it cannot
  be), else None: the default. A function is given as its Embedder
  value: its first vectors checked before anything is written."""
  found = user_embedder.used_by_run(info, embedder_from(args))
  return None if found is None else embedding.of(found)


def matchers_for(embedder):
  """A matcher factory (metrics/measure/aggregate.py) whose matchers read
  with `embedder`; None for the default embedder."""
  if embedder is None:
    return None
  return lambda run: NormMatcher(run.targets, behaviours=run.behaviours,
                                 embedder=embedder)


def positive(name: str):
  """An argparse type: a whole number of at least 1, named in its errors."""
  def convert(text: str) -> int:
    try:
      value = int(text)
    except ValueError:
      raise argparse.ArgumentTypeError(
          f"{name} must be a whole number, not {text!r}") from None
    if value < 1:
      raise argparse.ArgumentTypeError(f"{name} must be at least 1")
    return value
  return convert


def add_models_flags(parser: argparse.ArgumentParser) -> None:
  """--models FILE and the game master's own endpoint (runs/model_roles.py)."""
  group = parser.add_argument_group(
      "models by role (default: the scenario's models: block, else one "
      "model for everyone; these flags replace the block)")
  group.add_argument(
      "--models", type=Path, metavar="FILE",
      help="a YAML file giving the game master, population groups, named "
      "agents or a share of agents other models; it wins over the "
      "scenario's models: block (docs/models.md)")
  group.add_argument("--gm-base-url", help="the game master's own "
                     "OpenAI-compatible base URL (the agents keep --base-url)")
  group.add_argument("--gm-model", help="the model name --gm-base-url serves")
  group.add_argument("--gm-api-key-env", metavar="VAR",
                     help="the variable holding --gm-base-url's API key")


def models_spec_from(args: argparse.Namespace) -> dict | None:
  """The models spec the flags give, or None: one model."""
  spec: dict = {}
  if getattr(args, "models", None) is not None:
    spec = model_roles.read_spec(args.models)
  url, name = getattr(args, "gm_base_url", None), getattr(args, "gm_model", None)
  if url or name:
    if "game_master" in spec:
      raise UserError("--gm-base-url and the --models file both give the game "
                      "master's model: keep one")
    if not (url and name):
      raise UserError("--gm-base-url and --gm-model go together: give both")
    endpoint = {"base_url": url, "model": name}
    if args.gm_api_key_env:
      endpoint["api_key_env"] = args.gm_api_key_env
    spec = {**spec, "game_master": "game_master",
            "endpoints": {**(spec.get("endpoints") or {}),
                          "game_master": endpoint}}
  return spec or None


def _seconds(text: str) -> float:
  """An argparse type: --outage-wait's seconds, 0 or more."""
  try:
    value = float(text)
  except ValueError:
    value = -1.0
  if not value >= 0:  # Also refuses nan.
    raise argparse.ArgumentTypeError(
        f"--outage-wait must be a number of seconds, 0 or more, not {text!r}")
  return value


def _price(text: str) -> float:
  try:
    value = float(text)
  except ValueError:
    value = -1.0
  if not value >= 0:
    raise argparse.ArgumentTypeError(
        f"a price per million tokens is a number, 0 or more, not {text!r}")
  return value


def add_budget_flags(parser: argparse.ArgumentParser,
                     total: bool = False) -> None:
  """--max-calls, --max-tokens (and their totals) and --outage-wait
  (runs/budget.py, runs/outage.py)."""
  group = parser.add_argument_group(
      "budgets and outages (a run stops `stopped: budget` after the slot in "
      "which it reaches a cap: it overshoots by at most that slot)")
  group.add_argument("--max-calls", type=positive("--max-calls"),
                     metavar="N", help="calls the endpoint answers per run, "
                     "at most (cached answers are free)")
  group.add_argument("--max-tokens", type=positive("--max-tokens"),
                     metavar="N", help="prompt and completion tokens per "
                     "run, at most")
  if total:
    group.add_argument("--max-total-calls", type=positive("--max-total-calls"),
                       metavar="N", help="calls of all the runs together, at "
                       "most (each run in flight may overshoot by a slot)")
    group.add_argument("--max-total-tokens",
                       type=positive("--max-total-tokens"), metavar="N",
                       help="tokens of all the runs together, at most")
  group.add_argument(
      "--outage-wait", type=_seconds, metavar="SECONDS",
      help="how long an endpoint that stopped answering (unreachable, 5xx, "
      "429 after retries) is waited for before the run stops `interrupted: "
      f"endpoint unreachable` (default {outage.DEFAULT_WAIT:g})")


def budget_from(args: argparse.Namespace,
                runs: tuple[Path, ...] = ()) -> Budget | None:
  """The caps the flags give (`runs`: a compare's or sweep's run
  directories, for the totals), or None."""
  budget = Budget(
      run=Caps(getattr(args, "max_calls", None),
               getattr(args, "max_tokens", None)),
      total=Caps(getattr(args, "max_total_calls", None),
                 getattr(args, "max_total_tokens", None)),
      runs=runs)
  return budget or None


def add_estimate_flags(parser: argparse.ArgumentParser) -> None:
  """--estimate and the prices it costs with (runs/estimate.py)."""
  group = parser.add_argument_group("estimate (nothing runs)")
  group.add_argument(
      "--estimate", action="store_true",
      help="print the expected calls, tokens and (with prices) cost, from "
      "the scenario's agents and simulated hours and the rates measured in "
      "the published runs, and run nothing")
  group.add_argument("--price-in", type=_price, metavar="PRICE",
                     help="price per million prompt tokens, for --estimate")
  group.add_argument("--price-out", type=_price, metavar="PRICE",
                     help="price per million completion tokens, for "
                     "--estimate")
