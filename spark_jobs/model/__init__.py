"""The replication model in plain Python: no Spark import, so it runs inside Spark workers."""
