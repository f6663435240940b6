"""The letters-of-another-script rule held while an answer is written.

`models/scripts.py` builds, from a prompt, the pattern an answer's free
text must match in the embedded server's grammar. It must refuse exactly
what `foreign_scripts` refuses after the answer is written: nothing a
capable model would rightly write is taken away, and the new samples that
rule cost (docs/measurements.md) are not asked for.
"""

from __future__ import annotations

import random
import re

import regex

from crsec_concordia.models import OpenAICompatibleModel
from crsec_concordia.models.cache import ResponseCache
from crsec_concordia.models.scripts import (confine, foreign_scripts,
                                            letters_pattern)
from tests.fake_openai import Reply

# Letters and other characters of several scripts, with what they are.
SAMPLES = ("abcXYZéñøßĳ"       # Latin, with diacritics and ligatures
           "噪声考虑"            # CJK
           "ひらカタ"            # Hiragana, Katakana
           "한국"                # Hangul
           "жизнь"              # Cyrillic
           "αβΩ"                # Greek
           "مرحبا"              # Arabic
           "ªº"                 # letters named otherwise (ordinals)
           "0123 .,;:!?'\"-—“”…\n\t\\/€%"  # not letters
           "😀①")


def python_regex(pattern: str) -> regex.Pattern:
  """`pattern` (Rust regex syntax, as llguidance reads it) for Python's
  `regex` module, which names Unicode classes alike but spells a code
  point \\x{..} as \\U........."""
  return regex.compile(re.sub(r"\\x\{([0-9A-F]+)\}",
                              lambda m: f"\\U{int(m[1], 16):08X}", pattern))


def test_the_pattern_refuses_exactly_what_the_check_refuses():
  rng = random.Random(7)
  for _ in range(400):
    prompt = "".join(rng.choices(SAMPLES, k=rng.randint(0, 12)))
    answer = "".join(rng.choices(SAMPLES, k=rng.randint(0, 12)))
    allowed = bool(python_regex(letters_pattern(prompt)).fullmatch(answer))
    assert allowed == (foreign_scripts(answer, prompt) == []), (prompt,
                                                                answer)


def test_an_english_prompt_allows_latin_and_every_non_letter_only():
  pattern = python_regex(letters_pattern("Judge what Abigail did."))
  assert pattern.fullmatch("disturbed by the noise — “café” 3€, naïve!\n")
  assert not pattern.fullmatch("disturbed by the 噪声")
  assert not pattern.fullmatch("жизнь")
  # A prompt naming a person in another script allows that script.
  assert python_regex(letters_pattern("Ask 李明 about it.")).fullmatch("李明")
  # A prompt without letters allows no letter at all.
  assert python_regex(letters_pattern("1 + 1 = ?")).fullmatch("2, 3.")
  assert not python_regex(letters_pattern("1 + 1 = ?")).fullmatch("two")


SCHEMA = {"type": "object", "required": ["verdicts"], "properties": {
    "verdicts": {"type": "array", "items": {
        "type": "object", "properties": {
            "quote": {"type": "string", "maxLength": 200},
            "verdict": {"type": "string", "enum": ["breaks", "follows"]},
            "at": {"type": "string", "pattern": "^[0-9]{2}:[0-9]{2}$"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "aside": {"type": ["string", "null"]},
            "other": {"not": {"type": "string", "maxLength": 3}}}}}}}


def test_confine_holds_every_free_string_and_no_fixed_one():
  confined = confine(SCHEMA, "Judge what Abigail did.")
  fields = confined["properties"]["verdicts"]["items"]["properties"]
  pattern = letters_pattern("Judge what Abigail did.")
  assert fields["quote"] == {"type": "string", "maxLength": 200,
                             "pattern": pattern}
  assert fields["note"]["anyOf"][0] == {"type": "string", "pattern": pattern}
  assert fields["aside"]["pattern"] == pattern
  # Under `not` a pattern would let through what it should hold back.
  assert "pattern" not in fields["other"]["not"]
  assert fields["verdict"] == SCHEMA["properties"]["verdicts"]["items"][
      "properties"]["verdict"]
  assert fields["at"]["pattern"] == "^[0-9]{2}:[0-9]{2}$"
  # The caller's schema is not changed.
  assert "pattern" not in SCHEMA["properties"]["verdicts"]["items"][
      "properties"]["quote"]


def make(server, **kwargs) -> OpenAICompatibleModel:
  return OpenAICompatibleModel(server.base_url, "k", "m", max_retries=0,
                               **kwargs)


def test_the_grammar_mode_sends_the_pattern_and_keeps_the_cache_key(
    server, tmp_path):
  schema = {"type": "object", "required": ["quote"],
            "properties": {"quote": {"type": "string"}}}
  server.script(Reply('{"quote": "it"}'))
  cache = ResponseCache(tmp_path / "responses.sqlite")
  model = make(server, schema_mode="grammar", confine_scripts=True,
               cache=cache, seed=1)
  assert model.sample_json("Quote it.", schema) == {"quote": "it"}
  (body,) = [r.body for r in server.chat_requests()]
  assert r"\P{L}" in body["grammar"]
  # An answer stored under the plain request passed the same rule, so the
  # confined request finds it: no new request is sent.
  plain = make(server, schema_mode="grammar", cache=cache, seed=1)
  assert plain.sample_json("Quote it.", schema) == {"quote": "it"}
  assert len(server.chat_requests()) == 1


def test_other_schema_modes_send_no_pattern(server):
  server.script(Reply('{"quote": "it"}'))
  schema = {"type": "object", "properties": {"quote": {"type": "string"}}}
  make(server, confine_scripts=True).sample_json("Quote it.", schema)
  (body,) = [r.body for r in server.chat_requests()]
  assert "pattern" not in str(body["response_format"])
