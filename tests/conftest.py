"""Shared fixtures. Tests mirror the code's layout: unit/ (plain Python), spark/, e2e/."""
