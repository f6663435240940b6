"""`crsec view`: an interactive page of a run, compare or sweep directory.

Writes one self-contained HTML file (default DIR/view.html; data, script
and style inline, nothing fetched) and with --serve serves it on
127.0.0.1, where it follows a run in progress slot by slot. A compare or
sweep directory gives one page with every run's data and a run picker.
No model is called; who holds which target is read by the norm matcher
with the run's own sentence embedder (run.json names it; --embedder gives
a user's), as the report reads it (crsec_concordia/view/).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crsec_concordia import outputs
from crsec_concordia.commands.flags import (add_embedder_flag, embedder_from)
from crsec_concordia.errors import UserError
from crsec_concordia.view import belief, live, page, serve

PAGE = "view.html"


def add_parser(sub) -> None:
  p = sub.add_parser("view", help="an interactive page of a run (or of a "
                     "compare or sweep directory): places, agents, norms "
                     "spreading, one scrubber over the slots")
  p.add_argument("path", metavar="RUN_COMPARE_OR_SWEEP_DIR", type=Path)
  p.add_argument("--out", type=Path, metavar="FILE",
                 help=f"the page to write (default DIR/{PAGE})")
  p.add_argument("--serve", action="store_true",
                 help="serve the page on 127.0.0.1 and print its URL; the "
                 "page follows a run in progress (Ctrl-C stops)")
  p.add_argument("--port", type=int, default=8765,
                 help="with --serve: the port (default 8765; 0: any free)")
  add_embedder_flag(p)
  p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
  path: Path = args.path
  if not path.is_dir():
    raise UserError(f"{path} is not a directory; pass a run, compare or "
                    "sweep directory written by crsec")
  if args.port is not None and not 0 <= args.port <= 65535:
    raise UserError(f"--port {args.port} is not a port; give 0-65535")
  out = args.out or path / PAGE
  outputs.writable_dir(out.parent, "--out" if args.out else
                       "RUN_COMPARE_OR_SWEEP_DIR",
                       fix="pass --out FILE somewhere you can write")
  embedder = embedder_from(args)
  if not args.serve:
    written = page.write(path, out, belief.Beliefs(embedder))
    print(f"crsec: wrote {written}", file=sys.stderr)
    print(written)
    return 0
  watch = live.Watch(path, embedder)
  # The page as the run is now (a served one follows it; this file not).
  out.parent.mkdir(parents=True, exist_ok=True)
  out.write_text(page.page_html(watch.data()[1]), encoding="utf-8")
  print(f"crsec: wrote {out}", file=sys.stderr)
  try:
    serve.serve(watch, out.name, args.port,
                ready=lambda url: print(f"{url}  (Ctrl-C stops)", flush=True))
  except OSError as e:
    raise UserError(f"cannot serve on 127.0.0.1:{args.port} ({e.strerror}); "
                    "choose another --port") from None
  return 0
