"""How the metrics are shown.

  csv_cells            CSV cells a spreadsheet shows as text, never runs
  tables               the metrics as files: CSV, Parquet, tidy tables
  figures              the Figure 2 analogs and the rest, PNG, SVG or PDF
  templating           the Jinja2 pages (metrics/templates/)
  report               the HTML report of a run or a compare directory
  findings             the paper's findings, each decided by a stated rule
  publish_figures      small PNGs for published results
  publish              `crsec report --publish`: docs/results/ and the like
  questionnaire_items  each operation's input and output, from the records
  questionnaire        the human-evaluation kit
"""
