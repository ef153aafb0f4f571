"""Every input's kind: the catalogue (one check and one message per kind), the roles' kinds files (roles/<role>/meta/input_kinds.yml) and the cross-checks."""
