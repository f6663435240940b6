"""Serves a GGUF model file on loopback as the embedded model is served.

For comparing other local models with the embedded one through any command
that takes an endpoint (`crsec run`, `crsec calibrate`, the benches): the
same llama.cpp server in-process (xllamacpp, the `embedded` extra), the same
slots and context, on a port you choose; it serves until interrupted.

  .venv/bin/python bench/serve_gguf.py MODEL.gguf --port 8091
  crsec calibrate --base-url http://127.0.0.1:8091/v1 --model NAME \\
      --schema-mode grammar

The model name sent is ignored by llama.cpp; pass the file's model name so
that calibrations and runs are keyed by it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crsec_concordia.models import embedded  # noqa: E402


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("gguf", type=Path, help="the GGUF model file")
  parser.add_argument("--port", type=int, default=8091)
  parser.add_argument("--parallel", type=int,
                      default=embedded.ServerSettings().n_parallel,
                      help="requests served at once (default: as embedded)")
  args = parser.parse_args()
  if not args.gguf.is_file():
    print(f"serve_gguf: {args.gguf} is not a file: give a GGUF model file",
          file=sys.stderr)
    return 2
  server = embedded.EmbeddedServer(embedded.ServerSettings(
      gguf=args.gguf, n_parallel=args.parallel))
  server.start(lambda m: print(m, file=sys.stderr), port=args.port)
  print(f"serving {args.gguf.name} at {server.base_url}", flush=True)
  try:
    while True:
      time.sleep(3600)
  except KeyboardInterrupt:
    server.stop()
  return 0


if __name__ == "__main__":
  sys.exit(main())
