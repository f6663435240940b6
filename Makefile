# The README's two commands: `make demo` (set up, then run the mini café on
# the embedded model) and `make test`.
.PHONY: setup demo test bench

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/crsec run

test:
	.venv/bin/python -m pytest -q

bench:
	.venv/bin/python bench/llm_throughput.py
	.venv/bin/python bench/agent_step_cost.py
