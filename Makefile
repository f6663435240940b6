# The README's two commands: `make demo` (set up, then run the mini café on
# the embedded model) and `make test` (set up, then the test suite). Both
# work first thing on a fresh clone; `make setup` takes seconds once done.
.PHONY: setup demo test bench paper check-core

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/crsec run

# On every core (at most 4 workers), a test file to a worker: its module
# fixtures are built once and its tests run in order, as alone.
test: setup
	.venv/bin/python -m pytest -q -n auto --maxprocesses 4 --dist loadfile

bench: setup
	.venv/bin/python bench/llm_throughput.py
	.venv/bin/python bench/agent_step_cost.py

# The paper's experiment to its end, then docs/results/ (hours; resumable).
paper: setup
	bash scripts/paper.sh

# The core install without extras, measured in a fresh venv (minutes; not
# part of `make test`; CI runs it first): no torch, Ray or llama.cpp, at
# most 600 MB, the README's composition runs on it, and `crsec report
# --embedder` reads a shipped run with a plain embedder.
check-core:
	bash scripts/check_core_install.sh
