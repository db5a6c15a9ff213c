"""pfscope's batch side, one folder a part: the replication model (plain Python, ``model``), the
simulator, Exchange's event readers (``exchange``), the published runs' format (``published``),
the Spark plumbing both pipelines share (``runtime``), and the two Spark pipelines, ``compute`` and
``ingest``."""
