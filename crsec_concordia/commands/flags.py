"""The flags several commands share: the model endpoint and whole numbers.

Here rather than in cli.py, which imports every command: a command that
reached back into cli.py for them would close an import circle.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from crsec_concordia import embedding
from crsec_concordia.calibration import run_policy
from crsec_concordia.embedding import user as user_embedder
from crsec_concordia.errors import UserError
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.models import EndpointConfig
from crsec_concordia.models.config import DEFAULT_IN_FLIGHT
from crsec_concordia.runs import model_roles


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
  group.add_argument("--timeout", type=float, help="seconds per request")
  group.add_argument(
      "--max-in-flight", type=int, metavar="N",
      help="requests sent at once at most (env CRSEC_MAX_IN_FLIGHT; "
           "default: the embedded server's slots, else "
           f"{DEFAULT_IN_FLIGHT}); the run's threads are sized by it")


def add_policy_flag(parser: argparse.ArgumentParser, default: str | None,
                    also: str = "") -> None:
  """--referee-policy (calibration/run_policy.py)."""
  parser.add_argument(
      "--referee-policy", metavar="POLICY", default=default,
      help="which of the referee's structures apply: "
      f"{run_policy.AUTO} (default: every one for the embedded model; for "
      f"an endpoint's, {run_policy.CALIBRATED} if it was, else "
      f"{run_policy.TRUSTING}), {run_policy.ALL_ON} (every one), "
      f"{run_policy.TRUSTING} (none that can refuse an answer), "
      f"{run_policy.CALIBRATED} (the choice of this model's `crsec "
      f"calibrate`), or a JSON file of switches{also}")


def endpoint_from(args: argparse.Namespace) -> EndpointConfig:
  """The endpoint the flags (and the environment) name."""
  return EndpointConfig.resolve(args.base_url, args.api_key, args.model,
                                args.schema_mode, args.timeout,
                                args.max_in_flight)


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
