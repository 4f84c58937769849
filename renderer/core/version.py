"""devlane's version: recorded in every `flow.metadata` and in the input hash."""

VERSION = "0.2.0"
