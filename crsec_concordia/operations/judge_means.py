"""The words the matcher's LLM judge is asked in: does a norm MEAN a target?

The judge (metrics/classifiers/judge.py) is a measurement's, but its
question is one of the judgement prompts a run's calibration is keyed by
(judgement_prompts.py hashes it): kept here, with the other prompts and
schemas, so that hashing them loads no metrics module.
"""

from __future__ import annotations

JUDGE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["answer"],
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
}
_JUDGE_PROMPT = """\
You check whether a person's social norm means the same as a target norm.
It does when holding the norm commits the person to the target's standard of
behaviour: the same behaviour, with the same or a wider scope. What people
usually do counts as much as a rule ("people usually do X" means "do X").
It does not when it only shares the topic: a narrower condition (the target
only at some times, in some places or towards some people), a different
behaviour, a permission or the opposite ("X is optional", "X is fine"), or a
scope that leaves the target's own case open.

Target norm: {target}
Person's norm: {norm}

Does the person's norm mean the target norm? Answer yes or no."""


def prompt(target: str, norm: str) -> str:
  """The question about one (norm, target) pair."""
  return _JUDGE_PROMPT.format(target=target, norm=norm)
