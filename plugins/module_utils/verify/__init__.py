"""The verification of a running server: its client, streams, statistics, output checks, gates and report."""
