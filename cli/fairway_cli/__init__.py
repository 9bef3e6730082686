"""`fairway`, the researcher CLI: talks to Fairway's REST API with a token."""

__version__ = "0.1.0"
