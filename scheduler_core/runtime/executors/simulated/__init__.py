"""The simulated executor: runs that end after their spec's `duration` (demo, what-if,
load tests), on nodes whose heartbeats Fairway makes up."""
