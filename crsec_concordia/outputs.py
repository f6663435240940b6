"""Where the commands write: checked before any work, one line when it fails.

A run or a sweep can take hours, and a report computes every metric before
it writes a page: an output directory that cannot be written (a typo, a
read-only mount, a file where a directory should be) is found out first,
by creating the directory and writing a file in it, not at the end with a
traceback. A write that fails later (a full disk) is one line naming the
file; whatever was written before it stays where it is.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from crsec_concordia.errors import UserError

# Errors of a write whatever file it was (a full disk has no file name).
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}
FIX = "choose a directory you can write to"


def _reason(error: OSError) -> str:
  return error.strerror or type(error).__name__


def writable_dir(path: Path | str, flag: str, fix: str = FIX) -> Path:
  """Creates `path` (and its parents) and test-writes a file in it.

  Raises:
    UserError: `{flag} {path}: cannot write there ({reason}); {fix}`.
  """
  path = Path(path)
  probe = path / f".crsec-write-test-{os.getpid()}"
  try:
    path.mkdir(parents=True, exist_ok=True)
    probe.write_bytes(b"")
    probe.unlink()
  except FileExistsError:
    raise UserError(f"{flag} {path}: cannot write there (it is a file); "
                    f"{fix}") from None
  except OSError as e:
    raise UserError(f"{flag} {path}: cannot write there ({_reason(e)}); "
                    f"{fix}") from None
  return path


@contextlib.contextmanager
def new_dir(path: Path | str, flag: str) -> Iterator[Path]:
  """`writable_dir`, and the directory removed again if it is still empty
  when the block fails (a run that could not start leaves nothing)."""
  path = Path(path)
  created = not path.exists()
  writable_dir(path, flag)
  try:
    yield path
  except BaseException:
    if created:
      with contextlib.suppress(OSError):
        path.rmdir()  # Only if empty: never anything written.
    raise


def _under(filename: object, roots: tuple[Path, ...]) -> bool:
  if not isinstance(filename, (str, os.PathLike)):
    return False
  target = Path(os.path.abspath(filename))
  return any(target.is_relative_to(os.path.abspath(root)) for root in roots)


@contextlib.contextmanager
def writing(*roots: Path | str, then: str = FIX) -> Iterator[None]:
  """A failed write under `roots` (or a full or read-only disk) as one line.

  The line names the file and says `then` (what to do next); what was
  written before the failure is left as it is. Other OSErrors (reading,
  the network) pass through unchanged.
  """
  paths = tuple(Path(r) for r in roots)
  try:
    yield
  except OSError as e:
    if not (_under(e.filename, paths) or e.errno in _WRITE_ERRNOS):
      raise
    # A failed write() has no file name: the place being written is named.
    what = (f"cannot write {e.filename}" if e.filename
            else f"a write failed while writing {paths[0]}")
    raise UserError(f"{what} ({_reason(e)}); what was written before is "
                    f"kept; {then}") from None
