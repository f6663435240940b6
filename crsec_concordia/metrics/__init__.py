"""The paper's measurements from run directories (docs/metrics.md).

Three sub-packages, by the question each answers:

  classifiers/  How is a norm matched to a target, and how wrong are the
                matcher and the referee? (matching, their measured error,
                and shares corrected for it)
  measure/      What happened in a run, and over seeds? (belief, behaviour,
                conflicts, talk, diffusion, emergent norms, usage; a run's
                tables and summary; means and intervals over seeds)
  present/      How is it shown? (CSV and Parquet tables, figures, the HTML
                report, published results, the human-evaluation kit)

Each imports only those listed before it, and reads run directories
through crsec_concordia.rundir. The entry points: `measure.run_metrics.
compute`, `measure.aggregate.aggregate`, `present.tables.write_run` and
`write_compare`, `present.report.run_report` and `compare_report`,
`present.publish.publish`; `crsec_concordia.load_run` gives the tables as
pandas DataFrames.
"""
