"""Plan: the flow asked for -> which services get a dev version, and why."""
