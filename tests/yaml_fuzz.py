"""Malformed variants of a valid YAML file, to fuzz the loader of its type.

A loader that explains itself must do so for every way a file can be wrong,
not only the ways its author thought of; these variants are the ways a
person, an editor or a disk really breaks a file. They come in two kinds,
both independent of what the file describes, so a new file type (sweep
files, say) gets the same fuzzing from its text and its pydantic model:

  syntax_mutants(text)         the bytes and the YAML: encodings, control
                               characters, broken syntax, tags, alias bombs,
                               deep nesting, huge numbers, size, a directory
  schema_mutants(text, model)  the fields: each required key removed or
                               null, each field given a value of the wrong
                               kind, an unknown key in each mapping

A file type adds its own semantic mutants (impossible times, unknown ids)
with `edited`. Every mutant must be rejected: the schema mutants assume the
model forbids unknown keys; the syntax ones assume every number in the file
is bounded and that a file of a megabyte is too big.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pydantic
import yaml


@dataclasses.dataclass(frozen=True)
class Mutant:
  """One malformed file: its bytes (None: a directory stands at its path)
  and, when known, the field path its error must name (e.g. clock.start)."""
  name: str
  content: bytes | None
  where: str | None = None

  def write(self, directory: Path) -> Path:
    """Writes it under `directory` with a name of its own; returns the path."""
    slug = re.sub(r"[^a-z0-9]+", "_", self.name.lower()).strip("_")[:80]
    path = directory / f"{slug or 'mutant'}.yaml"
    if self.content is None:
      path.mkdir(parents=True)
    else:
      path.write_bytes(self.content)
    return path


def edited(base: str, name: str, old: str, new: str,
           where: str | None = None, count: int = 1) -> Mutant:
  """`base` with `old` replaced by `new` (which must be there)."""
  if old not in base:
    raise ValueError(f"mutant {name}: {old!r} is not in the base text")
  return Mutant(name, base.replace(old, new, count).encode("utf-8"), where)


def reshaped(base: str, name: str, change: Callable[[Any], None],
             where: str | None = None) -> Mutant:
  """`base` loaded, changed in place by `change`, dumped again (for changes
  that are awkward as text: an emptied list, a value that must be quoted)."""
  data = yaml.safe_load(base)
  change(data)
  return Mutant(name, yaml.safe_dump(data, sort_keys=False,
                                     allow_unicode=True).encode("utf-8"), where)


# -- the bytes and the YAML ----------------------------------------------------


def _first_value_line(text: str) -> tuple[int, str, str]:
  """(index, key, value) of the first top-level `key: value` line with a
  value on it."""
  lines = text.splitlines()
  for i, line in enumerate(lines):
    m = re.fullmatch(r"([A-Za-z_][\w-]*):[ \t]+(\S.*)", line)
    if m and not m[2].startswith("#"):
      return i, m[1], m[2]
  raise ValueError("no top-level `key: value` line to mutate")


def _with_value(text: str, value: str) -> str:
  """`text` with the first top-level value replaced by `value`."""
  i, key, _ = _first_value_line(text)
  lines = text.splitlines()
  lines[i] = f"{key}: {value}"
  return "\n".join(lines) + "\n"


def _bomb(kind: str = "list", levels: int = 9, width: int = 10) -> str:
  """A "billion laughs": `width ** levels` leaves from a few hundred bytes,
  as one flow value whose anchors live inside it (no extra keys)."""
  if kind == "list":
    parts = ["&l0 [" + ", ".join(["lol"] * width) + "]"]
    for level in range(1, levels):
      parts.append(f"&l{level} [" + ", ".join([f"*l{level - 1}"] * width) + "]")
  else:
    parts = ["&m0 {" + ", ".join(f"k{j}: lol" for j in range(width)) + "}"]
    for level in range(1, levels):
      parts.append(f"&m{level} {{" + ", ".join(
          f"k{j}: *m{level - 1}" for j in range(width)) + "}")
  return "[" + ", ".join(parts) + "]"


def syntax_mutants(text: str) -> list[Mutant]:
  """File-level mutants of the valid YAML `text`, for any file type."""
  data = text.encode("utf-8")
  index, key, _ = _first_value_line(text)
  lines = text.splitlines()
  middle = len(data) // 2
  out = [
      Mutant("empty file", b""),
      Mutant("only blank lines", b"\n  \n\n"),
      Mutant("only comments", b"# nothing here yet\n# to be written\n"),
      Mutant("a directory", None),
      Mutant("binary junk", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4),
      Mutant("an INI file", b"[cafe]\nname = Hobbs\nopens = 09:00\n"),
      Mutant("a sentence, not a mapping",
             b"This is a note about the cafe, not a configuration.\n"),
      Mutant("a JSON list", b'["a", "b", {"c": 1}]\n'),
      Mutant("a bare number", b"42\n"),
      Mutant("Latin-1 bytes", data[:middle] + b" caf\xe9 " + data[middle:]),
      Mutant("UTF-16", text.encode("utf-16")),
      Mutant("a lone continuation byte", b"\x80" + data),
      Mutant("a truncated UTF-8 character", data + "é".encode()[:1]),
      Mutant("a NUL byte", data[:middle] + b"\x00" + data[middle:]),
      Mutant("a control character", data[:middle] + b"\x07" + data[middle:]),
      Mutant("tab indentation", "\n".join(
          "\t" + line.lstrip(" ") if line.startswith("  ") else line
          for line in lines).encode()),
      Mutant("an unclosed quote", _with_value(text, '"never closed').encode()),
      Mutant("an unclosed bracket", _with_value(text, "[a, b").encode()),
      Mutant("an unclosed brace", _with_value(text, "{a: b").encode()),
      Mutant("two documents", (text + "---\n" + text).encode()),
      Mutant("an undefined alias", _with_value(text, "*nowhere").encode()),
      Mutant("a python object tag", _with_value(
          text, '!!python/object/apply:os.system ["echo pwned"]').encode()),
      Mutant("an unknown local tag", _with_value(text, "!include other.yaml").encode()),
      Mutant("an unhashable key", (text + "? [a, b]\n: c\n").encode()),
      Mutant("a bad !!int", _with_value(text, "!!int twelve").encode()),
      Mutant("a bad !!float", _with_value(text, "!!float lots").encode()),
      Mutant("a bad !!bool", _with_value(text, "!!bool maybe").encode()),
      Mutant("a bad !!timestamp (month 13)",
             _with_value(text, "!!timestamp 2024-13-45").encode()),
      Mutant("a bad !!timestamp (not a date)",
             _with_value(text, "!!timestamp soon").encode()),
      Mutant("a bad !!binary", _with_value(text, '!!binary "abc"').encode()),
      Mutant("a list alias bomb", _with_value(text, _bomb("list")).encode(), key),
      Mutant("a mapping alias bomb", _with_value(text, _bomb("map")).encode(), key),
      Mutant("an alias bomb as the document", _bomb("list").encode()),
      Mutant("deeply nested lists",
             _with_value(text, "[" * 5000 + "]" * 5000).encode()),
      Mutant("deeply nested mappings",
             _with_value(text, "{a: " * 3000 + "x" + "}" * 3000).encode()),
      Mutant("deeply nested block lists", ("- " * 3000 + "x\n").encode()),
      Mutant("a duplicate top-level key",
             "\n".join(lines[:index + 1] + lines[index:]).encode() + b"\n", key),
      Mutant("a file of several megabytes",
             data + b"\n" + (b"# padding " + b"x" * 90 + b"\n") * 25_000),
  ]
  ints = [m for m in re.finditer(r"(?m)^(\s*[\w-]+:\s*)([-+]?\d+)\s*$", text)]
  if ints:
    m = ints[0]
    for label, number in (("a number of 5000 digits", "9" * 5000),
                          ("a number of 40 digits", "1" + "0" * 39),
                          ("a negative number of 40 digits", "-" + "9" * 40)):
      out.append(Mutant(label, (text[:m.start(2)] + number
                                + text[m.end(2):]).encode()))
  return out


# -- the fields ----------------------------------------------------------------


def _strip(tp: Any) -> Any:
  while get_origin(tp) is Annotated:
    tp = get_args(tp)[0]
  return tp


def _options(tp: Any) -> list[Any]:
  """The alternatives of a union (one item for anything else)."""
  tp = _strip(tp)
  if get_origin(tp) in (Union, types.UnionType):
    return [_strip(a) for a in get_args(tp)]
  return [tp]


def _kind(tp: Any) -> str:
  """model, list, dict, str, int, float, bool, literal or other."""
  if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
    return "model"
  origin = get_origin(tp)
  if origin in (list, tuple, set, frozenset):
    return "list"
  if origin is dict:
    return "dict"
  if origin is Literal:
    return "literal"
  if tp in (str, int, float, bool):
    return tp.__name__
  return "other"


# A value of the wrong kind for each kind of field (never coerced by pydantic
# into the right one: a list is no text, "many" no number, a mapping no list).
_WRONG = {"model": ["a", "list"], "dict": ["a", "list"], "str": ["a", "list"],
          "literal": ["a", "list"], "list": {"a": "mapping"}, "int": "many",
          "float": "much", "bool": "maybe", "other": {"a": "mapping"}}


def _accepts(kinds: list[str], value: Any) -> bool:
  """Whether a field of these kinds could take `value` (then it is no
  wrong type)."""
  if isinstance(value, list):
    return "list" in kinds
  if isinstance(value, dict):
    return bool({"dict", "model"} & set(kinds))
  return "str" in kinds or "other" in kinds


def _path(loc: tuple) -> str:
  out = ""
  for part in loc:
    out += f"[{part}]" if isinstance(part, int) else (
        f".{part}" if out else str(part))
  return out


def _occurrences(data: Any, model: type[pydantic.BaseModel], loc: tuple = ()
                 ) -> Iterator[tuple[tuple, type[pydantic.BaseModel], str, Any]]:
  """(location of the mapping, its model, field name, field annotation) for
  every field of every mapping the model describes, in file order."""
  if not isinstance(data, dict):
    return
  for name, field in model.model_fields.items():
    yield loc, model, name, field.annotation
    if name not in data:
      continue
    yield from _inside(data[name], field.annotation, loc + (name,))


def _inside(value: Any, tp: Any, loc: tuple) -> Iterator[Any]:
  for option in _options(tp):
    kind = _kind(option)
    if kind == "model":
      yield from _occurrences(value, option, loc)
    elif kind == "list" and isinstance(value, list) and get_args(option):
      for i, item in enumerate(value):
        yield from _inside(item, get_args(option)[0], loc + (i,))
    elif kind == "dict" and isinstance(value, dict) and get_args(option):
      for k, item in value.items():
        yield from _inside(item, get_args(option)[1], loc + (k,))


def _at(data: Any, loc: tuple) -> Any:
  for part in loc:
    data = data[part]
  return data


def schema_mutants(text: str, model: type[pydantic.BaseModel], *,
                   load: Callable[[str], Any] = yaml.safe_load) -> list[Mutant]:
  """Field-level mutants of `text`, a valid file for `model`, re-written with
  yaml.safe_dump (comments go; YAML-1.1-ambiguous text comes out quoted).

  One mutant per (model, field, way) on the field's first occurrence, so a
  list of ten agents gives one set of agent mutants, not ten.
  """
  data = load(text)
  seen: set[tuple[str, str, str]] = set()
  out: list[Mutant] = []

  def emit(way: str, where: tuple, change: Callable[[Any], None],
           model_name: str, field: str) -> None:
    if (model_name, field, way) in seen:
      return
    seen.add((model_name, field, way))
    mutated = copy.deepcopy(data)
    change(mutated)
    dumped = yaml.safe_dump(mutated, sort_keys=False, allow_unicode=True)
    label = _path(where) or "(top level)"
    out.append(Mutant(f"{label}: {way}", dumped.encode("utf-8"), label))

  for loc, model_cls, name, annotation in _occurrences(data, model):
    parent, options = _at(data, loc), _options(annotation)
    required = model_cls.model_fields[name].is_required()
    where, label = loc + (name,), model_cls.__name__
    if model_cls.model_config.get("extra") == "forbid":
      emit("an unknown key", loc + ("zz_unknown_key",),
           lambda d, loc=loc: _at(d, loc).__setitem__("zz_unknown_key", 1),
           label, "")
    if name not in parent:
      continue  # An optional field the file leaves out.

    def set_to(value: Any, loc=loc, name=name) -> Callable[[Any], None]:
      return lambda d: _at(d, loc).__setitem__(name, copy.deepcopy(value))

    kinds = [_kind(o) for o in options]
    wrong = next((_WRONG[k] for k in kinds if k != "other"), None)
    if wrong is not None and not _accepts(kinds, wrong):
      emit("wrong type", where, set_to(wrong), label, name)
    if type(None) not in options:
      emit("null", where, set_to(None), label, name)
    if required:
      emit("missing", where, lambda d, loc=loc, name=name: _at(d, loc).pop(name),
           label, name)
    items = [_kind(_options(get_args(o)[0])[0]) for o in options
             if _kind(o) == "list" and get_args(o)]
    if parent[name] and items and items[0] in ("str", "int", "literal"):
      emit("an item of the wrong type", where + (0,),
           lambda d, loc=loc, name=name: _at(d, loc)[name].__setitem__(
               0, {"a": "mapping"}), label, name)
  return out
