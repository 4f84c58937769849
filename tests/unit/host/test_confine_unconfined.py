"""The record of a machine where no sandbox can be built (`confine._unconfined`): every layer missing with the
reason, but close-on-exec, which devlane enforces itself; the tool named `none` (mutation testing, issue 41)."""

from __future__ import annotations

from renderer.host import confine


def test_without_a_sandbox_only_close_on_exec_holds_and_every_other_layer_says_why():
    found = confine._unconfined("none", "user namespaces are disabled here")
    assert (found.method, found.tool, found.reason) == ("none", "none", "user namespaces are disabled here")
    assert [layer.name for layer in found.layers] == list(confine.LAYERS)
    held = {layer.name: (layer.enforced, layer.how) for layer in found.layers}
    assert held.pop("close-on-exec") == (True, "only its stdin, stdout and stderr are inherited")
    assert set(held.values()) == {(False, "user namespaces are disabled here")}
