"""The model on the host: the Hub fetch, the manifest and stamp, progress, the offline lint."""
