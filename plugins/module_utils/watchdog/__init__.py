"""The liveness watchdog: what one run decides, its metrics, the files its role installs."""
