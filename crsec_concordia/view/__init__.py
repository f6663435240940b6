"""`crsec view`: one self-contained HTML page to watch a run.

load.py reads a run directory (and a compare or sweep directory's runs)
with the run-directory readers only; belief.py reads who holds which
target norm with the norm matcher and the run's own sentence embedder;
extract.py turns what the run and its report wrote into the page's
compact data; norms.py and slots.py make its parts; page.py puts the data,
the page's script and style in one file; live.py makes the data again as
a run goes and serve.py serves it on localhost, where the page follows
the run. No model is called. The view may read the metrics (the matcher,
adoption); the run's writer never imports it.
"""
