"""pfscope's operator side: the command line, the dashboard and the reports."""
