"""`crsec view`: one self-contained HTML page to watch a run.

load.py reads a run directory (and a compare or sweep directory's runs)
with the run-directory readers only; extract.py turns what the run and its
report wrote into the page's compact data; norms.py and slots.py make its
parts; page.py puts the data, the page's script and style in one file;
serve.py serves it on localhost. Nothing here calls a model or the
sentence embedder: a norm means a target where the report said so (or by
its exact wording), so the page works on the core install.
"""
