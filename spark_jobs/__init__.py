"""pfscope's batch side: the replication model (plain Python), the simulator and the Spark job."""
