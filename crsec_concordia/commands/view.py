"""`crsec view`: an interactive page of a run, compare or sweep directory.

Writes one self-contained HTML file (default DIR/view.html; data, script
and style inline, nothing fetched) and with --serve serves it on
127.0.0.1. A compare or sweep directory gives one page with every run's
data and a run picker. Nothing is computed with a model or an embedder:
the page shows what the run wrote and, when `crsec report` ran, what the
report computed (crsec_concordia/view/).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crsec_concordia import outputs
from crsec_concordia.errors import UserError
from crsec_concordia.view import page, serve

PAGE = "view.html"


def add_parser(sub) -> None:
  p = sub.add_parser("view", help="an interactive page of a run (or of a "
                     "compare or sweep directory): places, agents, norms "
                     "spreading, one scrubber over the slots")
  p.add_argument("path", metavar="RUN_COMPARE_OR_SWEEP_DIR", type=Path)
  p.add_argument("--out", type=Path, metavar="FILE",
                 help=f"the page to write (default DIR/{PAGE})")
  p.add_argument("--serve", action="store_true",
                 help="serve the page on 127.0.0.1 and print its URL "
                 "(Ctrl-C stops)")
  p.add_argument("--port", type=int, default=8765,
                 help="with --serve: the port (default 8765; 0: any free)")
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
  written = page.write(path, out)
  print(f"crsec: wrote {written}", file=sys.stderr)
  if args.serve:
    try:
      serve.serve(written, args.port,
                  ready=lambda url: print(f"{url}  (Ctrl-C stops)",
                                          flush=True))
    except OSError as e:
      raise UserError(f"cannot serve on 127.0.0.1:{args.port} ({e.strerror}); "
                      "choose another --port") from None
  else:
    print(written)
  return 0
