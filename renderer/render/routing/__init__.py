"""Routing: flow entry points and mesh routes to the dev copies."""
