"""Prometheus for the fleet: the hosts it scrapes, its configuration and alert rules."""
