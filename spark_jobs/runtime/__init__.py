"""What the Spark pipelines share: the session, the JVM's class archive, the workers' daemon, the files
workers write themselves, the flags read before the JVM starts, the digest of the code that wrote a
state."""
