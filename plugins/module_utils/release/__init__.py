"""A host's releases: the record, the restore target, and the prunes that keep what they protect."""
