"""Reading a personal norm's wording before it is embedded.

Agents write norms as long policy sentences, several norms in one ("Keep
the noise down; tip after your meal"), permissions ("smoking indoors is fine
if the window is open") and contrasts ("take your cigarettes outside rather
than smoking at the table"). A sentence embedding averages all of that into
one vector: a compound norm sits between its targets, a permission next to
the prohibition it undoes. These helpers take the wording apart so that the
matcher can score each part on its own:

- `clauses`: the sentence split at clause boundaries (sentence ends,
  semicolons and colons, "but", "and" joining two clauses), every part of at
  least MIN_CLAUSE_WORDS words;
- `without_contrast`: the part a norm turns away from ("... rather than X",
  "instead of X, ...", "better to A than B") removed, since it names the
  behaviour the norm rejects;
- `without_reason`: the reason a policy sentence gives ("so that ...",
  "out of respect for ...") removed, so that the norm itself is compared;
- `is_permission`: the clause permits or dismisses a behaviour ("is fine",
  "optional", "no need to", "nobody minds", "doesn't matter"), so it commits
  its holder to no standard and cannot MEAN a target;
- `has_negation`: the clause refuses or disapproves of something ("never",
  "avoid", "careless"), which the embedding barely shows;
- `without_negation`: the clause with its plain negators ("not", "no",
  "never", "avoid") taken out: "People should not tip." becomes "People
  should tip.", the deed it speaks of, so that two norms about one deed
  with opposite stances can be told apart.

Only English function words are used: nothing here knows a venue, so any
scenario's targets are read the same way.
"""

from __future__ import annotations

import re

MIN_CLAUSE_WORDS = 3

# Sentence ends, semicolons, colons and dashes end a clause.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\s*[;:]\s*|\s+[-\u2013\u2014]\s+")
# Words that start a new clause inside a sentence. "and" splits only after
# a comma, or before a word that starts an imperative or a new subject, so
# that "smoke-free and quiet" or "fruit and vegetables" stay whole.
_JOINERS = re.compile(
    r",?\s+\b(?:but|whereas|although|though|yet|as long as|so long as|"
    r"provided that|and also|as well as)\b\s+"
    r"|,\s+(?:and|also|plus)\s+"
    r"|\s+and\s+(?=(?:also\s+)?(?:always|never|don't|do not|please|remember|"
    r"make sure|keep|avoid|be|leave|put|give|take|try|they|you|we|people|"
    r"everyone|nobody|no one)\b)",
    re.IGNORECASE)
# What a norm turns away from: "A rather than B", "A instead of B",
# "better to A than B" (a bare "than" only after better/prefer: "more than
# you need" compares amounts); and "Instead of B, A" at a clause's start.
_CONTRAST_TAIL = re.compile(
    r",?\s+(?:rather than|instead of)\b.*$", re.IGNORECASE)
_PREFERENCE_TAIL = re.compile(
    r"(\b(?:better|preferable|prefer|preferably)\b.*?),?\s+than\b.*$",
    re.IGNORECASE)
_CONTRAST_HEAD = re.compile(
    r"^\s*(?:rather than|instead of)\b[^,]*,\s*", re.IGNORECASE)

_PERMISSION = re.compile(
    r"\b(?:(?:is|are|it's|it is|that's|that is|seems|considered|be)\s+"
    r"(?:perfectly\s+|totally\s+|quite\s+|completely\s+|generally\s+)?"
    r"(?:fine|ok|okay|acceptable|alright|all right|no problem)"
    r"|optional|nothing wrong|no need\b|no reason to|not necessary"
    r"|not required|not expected|not obliged|not obligatory|not mandatory"
    r"|(?:do|does|did)(?:n't| not) (?:have|need) to|don't bother|doesn't bother"
    r"|(?:do|does)(?:n't| not) matter|(?:nobody|no one) (?:minds|cares)"
    r"|without anyone minding|waste of (?:time|effort)|up to (?:each|you|them)"
    r"|as \w+ as (?:you|they) (?:like|want|please)|feel free|free to"
    r"|(?:nobody|no one) should feel (?:pressured|obliged|forced)"
    r"|(?:should|must)(?:n't| not) feel (?:pressured|obliged|forced))",
    re.IGNORECASE)


# Words that say a behaviour is refused or disapproved of: a norm that
# names a target's violating behaviour with one of these asks for the
# target ("never leave tools out", "leaving tools out is careless"); without
# one, it describes or endorses the violation ("people leave tools out").
_NEGATION = re.compile(
    r"\b(?:not|no|never|nobody|no one|none|nothing|nowhere|without|avoid\w*"
    r"|refrain\w*|stop|prohibit\w*|forbid\w*|ban|banned|against|free"
    r"|rude|disrespectful|inconsiderate|careless|selfish|unacceptable"
    r"|inappropriate|wrong|stealing|theft|lack of|frowned|impolite"
    r"|irresponsible|instead|rather|only|alone|away|off|out of)\b|n't\b",
    re.IGNORECASE)


# Why a norm holds ("..., so that others are not disturbed", "out of
# respect for ...", "to maintain a pleasant atmosphere"): policy sentences
# add reasons that pull their embedding away from the bare norm.
_REASON_TAIL = re.compile(
    r",?\s+(?:so that|so as to|in order to|because|since|as a sign of|"
    r"as a way (?:to|of)|out of (?:respect|consideration|courtesy)|"
    r"to (?:maintain|ensure|provide|preserve|support|show|thank|protect|"
    r"help|allow|let|acknowledge|make sure|keep the|respect))\b.*$"
    r"|,\s+as\s+.*$", re.IGNORECASE)
_REASON_HEAD = re.compile(
    r"^\s*(?:in order to|to (?:preserve|maintain|respect|keep|protect)|"
    r"out of (?:respect|consideration|courtesy))\b[^,]*,\s*", re.IGNORECASE)


def without_reason(text: str) -> str:
  """`text` without the reason it gives ("so that ...", "out of respect")."""
  bare = _REASON_TAIL.sub("", _REASON_HEAD.sub("", text))
  return bare.strip() if _words(bare) >= MIN_CLAUSE_WORDS else text.strip()


def has_negation(text: str) -> bool:
  """True when `text` refuses or disapproves of something (see _NEGATION)."""
  return bool(_NEGATION.search(text))


# Plain negators, in the order they are taken out (see without_negation).
_UNNEGATE = (
    (re.compile(r"\bcan(?:not|'t)\b", re.I), "can"),
    (re.compile(r"\bwon't\b", re.I), "will"),
    (re.compile(r"\b(\w+)n't\b", re.I), r"\1"),
    (re.compile(r"\b(?:no one|nobody)\b", re.I), "everyone"),
    (re.compile(r"\b(?:not|never|no)\s+", re.I), ""),
    (re.compile(r"\b(?:avoid(?:s|ing)?|refrain(?:s|ing)? from)\s+", re.I), ""),
)


def without_negation(text: str) -> tuple[str, bool]:
  """(`text` with its plain negators taken out, whether there were any).

  Only "not", "n't", "no", "never", "nobody", "avoid" and "refrain from":
  a word that disapproves ("careless", "rude") keeps its clause as it is,
  since taking it out would not give the deed the clause speaks of.
  """
  out = text
  for pattern, repl in _UNNEGATE:
    out = pattern.sub(repl, out)
  out = " ".join(out.split())
  return out, out != " ".join(text.split())


def _words(text: str) -> int:
  return len(re.findall(r"[A-Za-z']+", text))


def tidy(text: str) -> str:
  """`text` without a leading joiner ("and", "also") or end punctuation."""
  text = re.sub(r"^(?:and|also|plus|but|so|then)\b,?\s*", "", text.strip(),
                flags=re.IGNORECASE)
  return text.strip(" ,.;:!?-\u2013\u2014")


def clauses(text: str, min_words: int = MIN_CLAUSE_WORDS,
            commas: bool = False) -> list[str]:
  """The clauses of `text` with at least `min_words` words, in order.

  A text of one clause gives itself (tidied). Parts shorter than
  `min_words` ("and quiet") are dropped: alone they mean little, and the
  whole text is scored too. With `commas`, every comma also ends a part
  (lists of duties: "put the tools back, pick only from your plot").
  """
  out: list[str] = []
  for sentence in _SENTENCE.split(text):
    parts = _JOINERS.split(sentence)
    if commas:
      parts = [p for part in parts for p in part.split(",")]
    kept: list[str] = []
    for part in map(tidy, parts):
      if not part:
        continue
      if _words(part) < min_words and kept:
        # Too short to stand alone ("and nobody minds"): it still qualifies
        # the clause before it, so it stays with that one.
        kept[-1] = f"{kept[-1]}, {part}"
      elif _words(part) >= min_words:
        kept.append(part)
    out.extend(k for k in kept if k not in out)
  return out or ([tidy(text)] if tidy(text) else [])


def without_contrast(text: str) -> str:
  """`text` without the part it turns away from ("rather than ...")."""
  head = _CONTRAST_HEAD.sub("", text)
  head = _PREFERENCE_TAIL.sub(r"\1", _CONTRAST_TAIL.sub("", head))
  return head.strip() or text.strip()


def is_permission(text: str) -> bool:
  """True when `text` permits or dismisses rather than asks for a behaviour."""
  return bool(_PERMISSION.search(text))
