"""One module per command; each adds its parser with `register(subparsers)` and sets
`handler`, a function of the parsed arguments and an ApiClient returning the exit code."""
