"""Tuning sweeps: the plan, each candidate's class, the ranking, the files on disk and the report."""
