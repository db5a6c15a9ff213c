"""``pfscope compute``: the Spark job. The event log read and validated, grouped by (folder, store),
streamed through the model's fold, joined and published as a run; or a refresh that folds on from
the last run's state."""
