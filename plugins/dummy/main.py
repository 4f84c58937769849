"""dummy: the built-in template plugin. It changes nothing and stores nothing.

Use it as the starting point of a new plugin (copy the directory), or to check that a
repository's plugin wiring works: `name: dummy` in a plugin definition resolves to this built-in.
"""


def create_flow(service_specs, pod_specs, flow_uuid):
    """Return the pod specs unchanged: same count, same order, as the contract requires."""
    return {"pod_specs": pod_specs, "config_map": {}}


def delete_flow(config_map, flow_uuid):
    """Nothing was created, so nothing is deleted."""
    return None
