"""Live changes to a running launch: the calls of the script contract and bean properties carried out on the
launch's parts, and the action directory's files."""
