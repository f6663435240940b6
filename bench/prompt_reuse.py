"""Which operations lose their prompt prefix, and what a cache could reuse.

Reads the request log a run writes with `CRSEC_CALL_LOG=FILE` (see
crsec_concordia/models/call_log.py) and prints, per operation (tag): its
calls, prompt tokens, the share the server reused from its prompt cache, and
the best any prefix cache could have reused: for each request, the longest
prefix it shares with any earlier request, as a share of its text, times its
prompt tokens. The gap between the two is the server's (slots, eviction);
what the best leaves is the prompts' own structure: what changes early.
With `--where`, it also shows, for the operations that lose most, where
their prompts part from the best earlier match (the text just after the
shared prefix), which says which part to move after the stable ones.

  CRSEC_CALL_LOG=/tmp/calls.jsonl crsec run scenarios/hobbs_cafe.yaml \
      --seed 1 --steps 12 --no-cache --out /tmp/cafe12
  python bench/prompt_reuse.py /tmp/calls.jsonl --where 3 --seen 40

`--seen` bounds what reordering can buy: the text each prompt shares, in
runs of some length, with any earlier prompt in any place. Far above the
best prefix, it says the run's prompts repeat each other a lot, but in
other places: an agent's own parts (persona, norms, plan) and a slot's
parts (the events everyone saw) cross, and a prefix can hold only one.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import os
import sys
from collections.abc import Sequence
from typing import Any

from crsec_concordia.models.call_log import read


def prompt_text(entry: dict[str, Any]) -> str:
  """The request's messages as one text, in the order the server reads."""
  return "".join(f"<{m['role']}>{m['content']}" for m in entry["messages"])


def best_prefixes(texts: Sequence[str]) -> list[tuple[int, int]]:
  """For each text: the length of the longest prefix it shares with any
  earlier text, and the index of that earlier text (-1 if none)."""
  out: list[tuple[int, int]] = []
  for i, text in enumerate(texts):
    best, where = 0, -1
    for j in range(i):
      n = len(os.path.commonprefix([text, texts[j]]))
      if n > best:
        best, where = n, j
    out.append((best, where))
  return out


def resent(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
  """Requests whose whole prompt the server already held though no logged
  request sent it: the client sent them again after a timeout (its own
  retries are not logged), and what the server did for the first sending
  was lost."""
  seen: set[str] = set()
  out = []
  for entry in entries:
    text = prompt_text(entry)
    if (text not in seen and entry["prompt_tokens"] > 1
        and entry["reused_prompt_tokens"] >= entry["prompt_tokens"] - 1):
      out.append(entry)
    seen.add(text)
  return out


def _texts_and_prefixes(entries: Sequence[dict[str, Any]]
                        ) -> tuple[list[str], list[tuple[int, int]]]:
  texts = [prompt_text(e) for e in entries]
  return texts, best_prefixes(texts)


def chunk_reuse(texts: Sequence[str], prefixes: Sequence[tuple[int, int]],
                min_chars: int) -> list[int]:
  """For each text: its shared prefix with its best earlier match, plus the
  later stretches of at least `min_chars` characters it shares with that
  match, in order: what a server that also reuses cached chunks after the
  prefix (llama.cpp's n_cache_reuse, in tokens: about a quarter of the
  characters) could have reused, had it held that match."""
  out = []
  for text, (shared, where) in zip(texts, prefixes):
    if where < 0:
      out.append(shared)
      continue
    matcher = difflib.SequenceMatcher(None, texts[where][shared:],
                                      text[shared:], autojunk=False)
    out.append(shared + sum(b.size for b in matcher.get_matching_blocks()
                            if b.size >= min_chars))
  return out


def seen_before(texts: Sequence[str], min_chars: int) -> list[int]:
  """For each text: how many of its characters lie in a run of at least
  `min_chars` characters that some earlier text holds anywhere. No
  ordering of the same prompts' parts lets any cache reuse more than that:
  what was never sent before has to be read."""
  seen: set[str] = set()
  out = []
  for text in texts:
    grams = [text[i:i + min_chars]
             for i in range(len(text) - min_chars + 1)]
    covered = bytearray(len(text))
    for i, gram in enumerate(grams):
      if gram in seen:
        covered[i:i + min_chars] = b"\x01" * min_chars
    seen.update(grams)
    out.append(sum(covered))
  return out


def summarize(entries: Sequence[dict[str, Any]],
              analysed: tuple[list[str], list[tuple[int, int]]] | None = None,
              chunks: Sequence[int] | None = None,
              seen: Sequence[int] | None = None
              ) -> dict[str, dict[str, float]]:
  """Per tag (and "all"): calls, prompt tokens, reused and best-case reused.

  `analysed`: the entries' texts and best prefixes, if already computed
  (the comparison of every prompt with every earlier one is the costly part).
  `chunks`: each entry's reusable characters with chunk reuse
  (chunk_reuse), giving "chunks", the best case with it.
  `seen`: each entry's characters sent before in any place (seen_before),
  giving "seen", the ceiling of any reordering.
  """
  texts, prefixes = analysed or _texts_and_prefixes(entries)
  rows: dict[str, collections.Counter] = collections.defaultdict(
      collections.Counter)
  for n, (entry, text, (shared, _)) in enumerate(
      zip(entries, texts, prefixes)):
    best = entry["prompt_tokens"] * shared / max(1, len(text))
    for tag in (entry["tag"], "all"):
      row = rows[tag]
      row["calls"] += 1
      row["prompt_tokens"] += entry["prompt_tokens"]
      row["reused"] += entry["reused_prompt_tokens"]
      row["best"] += best
      if chunks is not None:
        row["chunks"] += entry["prompt_tokens"] * chunks[n] / max(1, len(text))
      if seen is not None:
        row["seen"] += entry["prompt_tokens"] * seen[n] / max(1, len(text))
      row["completion_tokens"] += entry["completion_tokens"]
      row["seconds"] += entry["seconds"]
  return {tag: dict(row) for tag, row in rows.items()}


def partings(entries: Sequence[dict[str, Any]], tag: str, width: int = 90,
             analysed: tuple[list[str], list[tuple[int, int]]] | None = None
             ) -> list[str]:
  """Where each of the tag's prompts parts from its best earlier match."""
  texts, prefixes = analysed or _texts_and_prefixes(entries)
  out = []
  for entry, text, (shared, where) in zip(entries, texts, prefixes):
    if entry["tag"] != tag:
      continue
    other = entries[where]["tag"] if where >= 0 else "none"
    after = text[shared:shared + width].replace("\n", " | ")
    out.append(f"  {shared / max(1, len(text)):4.0%} shared (with {other}),"
               f" then: {after!r}")
  return out


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("log", help="the CRSEC_CALL_LOG file of a run")
  parser.add_argument("--chunks", type=int, default=0, metavar="CHARS",
                      help="also the best case with later chunks of at least "
                           "CHARS characters reused after the prefix "
                           "(llama.cpp's n_cache_reuse; see "
                           "bench/cache_reuse.py)")
  parser.add_argument("--seen", type=int, default=0, metavar="CHARS",
                      help="also the share of prompt text sent before in "
                           "runs of at least CHARS characters, anywhere in "
                           "an earlier prompt: the ceiling of any reordering "
                           "of the same parts")
  parser.add_argument("--where", type=int, default=0, metavar="N",
                      help="show where prompts part for the N operations "
                           "that lose the most prompt tokens")
  args = parser.parse_args(argv)
  try:
    entries = read(args.log)
  except (OSError, ValueError) as e:
    print(f"prompt_reuse: cannot read {args.log}: {e}", file=sys.stderr)
    return 2
  if not entries:
    print(f"prompt_reuse: {args.log} logs no requests", file=sys.stderr)
    return 2
  analysed = _texts_and_prefixes(entries)
  chunks = (chunk_reuse(*analysed, args.chunks) if args.chunks > 0
            else None)
  seen = (seen_before(analysed[0], args.seen) if args.seen > 0 else None)
  rows = summarize(entries, analysed, chunks, seen)
  extra = f" {'chunks':>7}" if chunks is not None else ""
  extra += f" {'seen':>7}" if seen is not None else ""
  print(f"{'operation':22} {'calls':>5} {'prompt':>7} {'reused':>7} "
        f"{'best':>7}{extra} {'lost':>7}")
  order = sorted((t for t in rows if t != "all"),
                 key=lambda t: rows[t]["prompt_tokens"] - rows[t]["reused"],
                 reverse=True)
  for tag in [*order, "all"]:
    r = rows[tag]
    p = max(1, r["prompt_tokens"])
    extra = f" {r['chunks'] / p:7.0%}" if chunks is not None else ""
    extra += f" {r['seen'] / p:7.0%}" if seen is not None else ""
    print(f"{tag:22} {r['calls']:5d} {r['prompt_tokens']:7d} "
          f"{r['reused'] / p:7.0%} {r['best'] / p:7.0%}{extra} "
          f"{r['prompt_tokens'] - r['reused']:7d}")
  total = rows["all"]
  with_chunks = ("" if chunks is None else
                 f"; with chunks of {args.chunks}+ characters: "
                 f"{total['chunks'] / total['prompt_tokens']:.0%}")
  if seen is not None:
    with_chunks += (f"; sent before anywhere ({args.seen}+ characters): "
                    f"{total['seen'] / total['prompt_tokens']:.0%}")
  print(f"prompt tokens reused: {total['reused'] / total['prompt_tokens']:.0%}"
        f" (best prefix cache: {total['best'] / total['prompt_tokens']:.0%}"
        f"{with_chunks})")
  again = resent(entries)
  print(f"requests sent again after a client timeout: {len(again)}"
        + "".join(f"\n  {e['tag']} ({e['seconds']:.0f} s)" for e in again))
  for tag in order[:args.where]:
    print(f"\n{tag}: where prompts part from the best earlier one")
    print("\n".join(partings(entries, tag, analysed=analysed)))
  return 0


if __name__ == "__main__":
  sys.exit(main())
