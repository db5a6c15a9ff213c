"""``pfscope ingest`` on Spark: the exports read in parallel by the pure readers of ``exchange``,
step 1's duplicates and accounting in SQL, the build steps per folder, and what an incremental
ingest keeps for the next run."""
