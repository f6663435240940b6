"""name_patterns.pattern_of: a name's pattern compiled once, matching as
`re` does, however many names a society has."""

from __future__ import annotations

import re

from crsec_concordia.name_patterns import pattern_of
from crsec_concordia.observations import says_nothing
from crsec_concordia.repetition import words


def test_a_pattern_is_compiled_once_and_matches_as_re_does():
  pattern = rf"\b{re.escape('Ada Abbott')}\b"
  assert pattern_of(pattern, re.I) is pattern_of(pattern, re.I)
  text = "ada abbott reads; Ada Abbott writes"
  assert (pattern_of(pattern, re.I).sub(" ", text)
          == re.sub(pattern, " ", text, flags=re.I))
  assert pattern_of(pattern).sub(" ", text) == re.sub(pattern, " ", text)


def test_name_checks_are_the_same_past_re_s_own_cache():
  # More names than `re` keeps patterns: every check still right.
  names = [f"Person{i} Name{i}" for i in range(1500)]
  for name in names:
    assert says_nothing(name, f"{name}.")
    assert not says_nothing(name, f"{name} reads the paper.")
    assert words(f"{name} reads the paper", [name]) == ["reads", "the",
                                                         "paper"]
