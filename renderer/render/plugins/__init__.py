"""Plugins: definitions chosen, called, and what they return held to the output policy."""
