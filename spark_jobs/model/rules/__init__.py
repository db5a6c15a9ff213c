"""The model's rules, one module per family, each a small pure function with its own tests.

The fold (``spark_jobs.model.fold``) calls them; the simulator asks them for every choice.
"""
