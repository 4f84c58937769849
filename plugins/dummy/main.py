"""dummy: the built-in template plugin. It changes nothing and stores nothing.

Use it to check that a repository's plugin wiring works (`name: dummy` in a plugin definition resolves to
this built-in), or as the skeleton of a new plugin: `devlane plugins new NAME` writes the same shape with
one argument wired through. Kardinal's dummy-plugin used the obsolete singular `(service_spec, pod_spec)`
signature; this one has the final runner's.
"""


def create_flow(service_specs, pod_specs, flow_uuid):
    """Return the pod specs unchanged: same count, same order, as the contract requires."""
    return {"pod_specs": pod_specs, "config_map": {}}


def delete_flow(config_map, flow_uuid):
    """Nothing was created, so nothing is deleted."""
    return None
