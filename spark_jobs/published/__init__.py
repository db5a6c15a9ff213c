"""The published runs' format: run folders, ``LATEST`` and the lock, written by the job and read by
the dashboard and the reports. Plain Python: no Spark."""
