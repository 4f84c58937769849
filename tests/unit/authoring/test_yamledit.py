"""Round-trip annotation edits (`renderer.authoring.yamledit`): on a corpus of awkward real-looking files and on
generated ones, an edit only inserts (every old byte stays), the file reads as the old objects plus the
annotation, a second plan is empty; existing values are never overwritten; what cannot be placed is skipped
with a reason."""

from __future__ import annotations

import os
import stat

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.yamledit import check_annotated, only_insertions

from renderer.authoring.yamledit import AnnotationEdit, EditPlan, apply, plan_annotations, unified_diff
from renderer.core.yamlio import parse_documents
from renderer.errors import DevlaneError

DEPS = "kardinal.dev.service/dependencies"
STATEFUL = "kardinal.dev.service/stateful"


def edit(index: int, name: str, key: str = DEPS, value: str = "orders:http,redis:tcp", kind: str = "Service",
         namespace: str | None = None, file: str = "f.yaml") -> AnnotationEdit:
    return AnnotationEdit(file, index, kind, name, namespace, key, value)


def round_trip(tmp_path, text: str, edits: list[AnnotationEdit], file: str = "f.yaml") -> str:
    """Plan `edits` on `text`, check the invariants, apply, and check a second plan is empty; the new text."""
    (tmp_path / file).write_bytes(text.encode())
    plan = plan_annotations(tmp_path, edits)
    assert not plan.skipped and not plan.disagreements, (plan.skipped, plan.disagreements)
    before, after = plan.changes[file]
    assert before == text
    added: dict[int, dict[str, str]] = {}
    for e in edits:
        added.setdefault(e.index, {})[e.key] = e.value
    check_annotated(before, after, added, file)
    assert apply(tmp_path, plan) == [file]
    assert (tmp_path / file).read_bytes() == after.encode()
    again = plan_annotations(tmp_path, edits)
    assert again == EditPlan({}, (), ())
    return after


# A corpus of awkward files: (text, edits by (index, name[, key, value, namespace])).
CORPUS = {
    "comments-everywhere": ("""\
# leading comment
apiVersion: v1   # the core group
kind: Service
# before metadata
metadata:   # metadata
  # before name
  name: cart # the name
  labels:
    app: cart   # label
    # end of labels
  # end of metadata
spec:
  # ports
  ports:
  - port: 80   # http
# the end
""", [(0, "cart")]),
    "anchors-and-merge-keys": ("""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: cart
  labels: &labels
    app: cart
spec:
  selector:
    matchLabels: *labels
  template:
    metadata:
      labels:
        <<: *labels
        tier: web
    spec:
      containers:
      - name: cart
        image: cart:1
""", [(0, "cart")]),
    "flow-metadata-with-annotations": (
        "apiVersion: v1\nkind: Service\nmetadata: {name: cart, annotations: {a: b}}\nspec: {ports: [{port: 80}]}\n",
        [(0, "cart")]),
    "flow-metadata-without-annotations": (
        "apiVersion: v1\nkind: Service\nmetadata: {name: cart,\n  labels: {app: cart}}\nspec: {}\n", [(0, "cart")]),
    "flow-document": ('{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "cart"}}\n', [(0, "cart")]),
    "four-space-indent": ("""\
apiVersion: v1
kind: Service
metadata:
    name: cart
    namespace: shop
spec:
    ports:
        -   port: 80
            name: http
""", [(0, "cart", DEPS, "orders:http", "shop")]),
    "indentless-sequences": ("""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: cart
  finalizers:
  - a
  - b
spec:
  template:
    spec:
      containers:
      - name: cart
        args:
        - --port=80
""", [(0, "cart")]),
    "documents-and-separators": ("""\
%YAML 1.1
--- # the service
apiVersion: v1
kind: Service
metadata:
  name: cart
...
---
--- # an empty document above
apiVersion: apps/v1
kind: Deployment
metadata:
  name: cart
spec: {}
---
""", [(0, "cart"), (2, "cart", STATEFUL, "true")]),
    "crlf": ("apiVersion: v1\r\nkind: Service\r\nmetadata:\r\n  name: cart\r\n  labels:\r\n    app: cart\r\n"
             "spec:\r\n  type: ClusterIP\r\n", [(0, "cart")]),
    "no-final-newline": ("apiVersion: v1\nkind: Service\nspec: {}\nmetadata:\n  name: cart", [(0, "cart")]),
    "quoted-keys": ("""\
"apiVersion": 'v1'
'kind': "Service"
"metadata":
  'name': "cart"
  "annotations":
    "a": 'b'
""", [(0, "cart")]),
    "existing-block-annotations": ("""\
apiVersion: v1
kind: Service
metadata:
  annotations:
    # Kardinal
    kardinal.dev.service/stateful: "false"   # not a store
    note: |
      a literal
      block
  name: cart
""", [(0, "cart")]),
    "existing-flow-annotations-in-block": ("""\
apiVersion: v1
kind: Service
metadata:
  name: cart
  annotations: {a: b,
    c: d,}   # trailing comma
spec: {}
""", [(0, "cart")]),
    "empty-flow-annotations": ("apiVersion: v1\nkind: Service\nmetadata:\n  name: cart\n  annotations: {}\n",
                               [(0, "cart")]),
    "empty-annotations": ("apiVersion: v1\nkind: Service\nmetadata:\n  name: cart\n  annotations:\n  labels: {}\n",
                          [(0, "cart")]),
    "bom-and-leading-comments": ("\ufeff# owned by the cart team\n\n---\napiVersion: v1\nkind: Service\nmetadata:\n"
                                 "  name: cart\n", [(0, "cart")]),
    "long-lines": ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cart\n  labels:\n    long: " + "x" * 300
                   + "\ndata:\n  text: " + "word " * 60 + "end\n", [(0, "cart", DEPS, "y" * 200)]),
    "literal-block-last": ("""\
apiVersion: v1
kind: Service
metadata:
  name: cart
  annotations:
    note: |+
      keep


spec: {}
""", [(0, "cart")]),
    "values-that-need-quotes": ("apiVersion: v1\nkind: Service\nmetadata:\n  name: cart\n", [
        (0, "cart", STATEFUL, "true"), (0, "cart", "x/number", "8080"), (0, "cart", "x/null", "null"),
        (0, "cart", "x/colon", "a: b"), (0, "cart", "x/hash", "#x"), (0, "cart", "x/empty", ""),
        (0, "cart", "x/space", " padded "), (0, "cart", "x/unicode", "café ☕"), (0, "cart", "x/float", "1.0")]),
    "multi-line-value": ("apiVersion: v1\nkind: Service\nmetadata:\n  name: redis-plugins\n", [
        (0, "redis-plugins", "kardinal.dev.service/plugin-definition",
         "- name: github.com/kurtosis-tech/redis-sidecar-plugin\n  type: stateful\n  servicename: redis-prod\n"),
        (0, "redis-plugins", "x/no-final-newline", "a\n  b"), (0, "redis-plugins", "x/trailing-space", "a \nb\n")]),
    "odd-indentation": ("apiVersion: v1\nkind: Service\nmetadata:\n   name: cart\n   labels:\n         app: cart\n",
                        [(0, "cart")]),
    "alias-last-in-metadata": ("""\
x-labels: &labels {app: cart}
x-notes: &notes
  team: shop
apiVersion: v1
kind: Service
metadata:
  name: cart
  annotations:
    <<: *notes
  labels: *labels
spec:
  selector: *labels
""", [(0, "cart")]),
    "merge-key-last-in-annotations": ("""\
x-notes: &notes {team: shop}
apiVersion: v1
kind: Service
metadata:
  name: cart
  annotations:
    owner: me
    <<: *notes
""", [(0, "cart")]),
    "tagged-and-anchored-metadata": ("apiVersion: v1\nkind: Service\nmetadata: !!map &meta\n  name: cart\n",
                                     [(0, "cart")]),
}


def corpus_edits(case: str) -> list[AnnotationEdit]:
    """The edits of a corpus case, of the kind its document has."""
    text, raw = CORPUS[case]
    docs = parse_documents(text.encode(), "f.yaml")
    return [edit(index, name, *rest[:2], kind=docs[index]["kind"], namespace=(rest[2:] or [None])[0])
            for index, name, *rest in raw]


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_corpus_edits_keep_every_byte(tmp_path, case):
    assert round_trip(tmp_path, CORPUS[case][0], corpus_edits(case)) != CORPUS[case][0]


def test_block_annotation_lines_follow_the_metadata_indentation(tmp_path):
    after = round_trip(tmp_path, CORPUS["four-space-indent"][0], [edit(0, "cart", namespace="shop")])
    assert "    namespace: shop\n    annotations:\n        kardinal.dev.service/dependencies: orders:http\n" \
           "spec:\n" in after.replace("orders:http,redis:tcp", "orders:http")
    after = round_trip(tmp_path, CORPUS["crlf"][0], [edit(0, "cart")])
    assert "    app: cart\r\n  annotations:\r\n    kardinal.dev.service/dependencies: orders:http,redis:tcp\r\n" \
           "spec:\r\n" in after


def test_flow_metadata_gets_flow_entries(tmp_path):
    after = round_trip(tmp_path, CORPUS["flow-metadata-with-annotations"][0], [edit(0, "cart")])
    assert "metadata: {name: cart, annotations: {a: b, kardinal.dev.service/dependencies: " \
           "'orders:http,redis:tcp'}}\n" in after
    after = round_trip(tmp_path, CORPUS["flow-metadata-without-annotations"][0], [edit(0, "cart")])
    assert "labels: {app: cart}, annotations: {kardinal.dev.service/dependencies: 'orders:http,redis:tcp'}}" in after


def test_values_are_quoted_only_where_yaml_would_read_another_type(tmp_path):
    after = round_trip(tmp_path, CORPUS["values-that-need-quotes"][0], corpus_edits("values-that-need-quotes"))
    assert "kardinal.dev.service/stateful: 'true'\n" in after
    assert "x/number: '8080'\n" in after and "x/null: 'null'\n" in after and "x/float: '1.0'\n" in after
    assert "x/unicode: café ☕\n" in after


def test_a_missing_final_newline_stays_missing(tmp_path):
    after = round_trip(tmp_path, CORPUS["no-final-newline"][0], [edit(0, "cart")])
    assert after.endswith("  annotations:\n    kardinal.dev.service/dependencies: orders:http,redis:tcp")


def test_multi_line_values_are_literal_blocks(tmp_path):
    after = round_trip(tmp_path, CORPUS["multi-line-value"][0], corpus_edits("multi-line-value"))
    assert ("    kardinal.dev.service/plugin-definition: |\n"
            "      - name: github.com/kurtosis-tech/redis-sidecar-plugin\n") in after
    assert "    x/no-final-newline: |-\n      a\n        b\n" in after


def test_an_existing_value_is_never_overwritten(tmp_path):
    text = CORPUS["existing-block-annotations"][0]
    (tmp_path / "f.yaml").write_text(text)
    same = edit(0, "cart", STATEFUL, "false")
    other = edit(0, "cart", STATEFUL, "true")
    plan = plan_annotations(tmp_path, [same])
    assert plan == EditPlan({}, (), ())
    plan = plan_annotations(tmp_path, [other, edit(0, "cart")])
    assert [(d.edit, d.existing) for d in plan.disagreements] == [(other, "false")]
    before, after = plan.changes["f.yaml"]
    assert STATEFUL + ': "false"   # not a store' in after and "'true'" not in after
    check_annotated(before, after, {0: {DEPS: "orders:http,redis:tcp"}})


def test_unquoted_existing_values_compare_as_their_text(tmp_path):
    (tmp_path / "f.yaml").write_text(f"kind: Service\napiVersion: v1\nmetadata:\n  name: a\n  annotations:\n"
                                     f"    {STATEFUL}: true\n")
    assert plan_annotations(tmp_path, [edit(0, "a", STATEFUL, "true")]) == EditPlan({}, (), ())
    assert plan_annotations(tmp_path, [edit(0, "a", STATEFUL, "false")]).disagreements[0].existing == "true"


CART = "apiVersion: v1\nkind: Service\nmetadata:\n  name: cart\n"


@pytest.mark.parametrize(("text", "wanted", "reason"), [
    (CART, edit(0, "orders"), "is Service/cart, not Service/orders"),
    (CART, edit(0, "cart", kind="Deployment"), "not Deployment"),
    (CART, edit(0, "cart", namespace="shop"), "in namespace shop"),
    (CART, edit(1, "cart"), "has no document 1"),
    ("---\n- a\n", edit(0, "cart"), "is not a mapping"),
    # A List's items are objects of the repository (loaded as kubectl reads them), but init edits documents only.
    ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: cart}\n",
     edit(0, "cart"), "is a List, whose items init does not edit: add the annotations to Service/cart in it by hand"),
    ("base: &m\n  name: cart\napiVersion: v1\nkind: Service\nmetadata: *m\n", edit(0, "cart"), "alias"),
    ("apiVersion: v1\nkind: Service\nmetadata: &m\n  name: cart\nspec:\n  copy: *m\n", edit(0, "cart"), "anchor"),
    ("apiVersion: v1\nkind: Service\nmetadata:\n  <<: {annotations: {a: b}}\n  name: cart\n", edit(0, "cart"),
     "merge key"),
    ("apiVersion: v1\nkind: Service\nmetadata:\n  name: cart\n  annotations: null\n", edit(0, "cart"),
     "not a mapping"),
    ("apiVersion: v1\nkind: Service\nmetadata:\n  name: [unclosed\n", edit(0, "cart"), "cannot be read"),
])
def test_what_cannot_be_placed_is_skipped_with_the_reason(tmp_path, text, wanted, reason):
    (tmp_path / "f.yaml").write_text(text)
    plan = plan_annotations(tmp_path, [wanted])
    assert plan.changes == {} and plan.disagreements == ()
    assert [e for e, _ in plan.skipped] == [wanted]
    assert reason in plan.skipped[0][1]


def test_files_outside_the_repository_or_missing_are_skipped(tmp_path):
    plan = plan_annotations(tmp_path, [edit(0, "a", file="../x.yaml"), edit(0, "a", file="missing.yaml")])
    assert [reason for _, reason in plan.skipped] == ["../x.yaml is not a file of the repository",
                                                       "missing.yaml is not a file of the repository"]


def test_several_objects_and_files_in_one_plan(tmp_path):
    text = CORPUS["documents-and-separators"][0]
    (tmp_path / "a.yaml").write_text(text)
    (tmp_path / "b.yaml").write_text(CORPUS["crlf"][0], newline="")
    edits = [edit(2, "cart", STATEFUL, "true", kind="Deployment", file="a.yaml"), edit(0, "cart", file="a.yaml"),
             edit(0, "cart", file="b.yaml"), edit(0, "cart", STATEFUL, "false", file="a.yaml")]
    plan = plan_annotations(tmp_path, edits)
    assert sorted(plan.changes) == ["a.yaml", "b.yaml"] and not plan.skipped
    check_annotated(*plan.changes["a.yaml"], {0: {DEPS: "orders:http,redis:tcp", STATEFUL: "false"},
                                              2: {STATEFUL: "true"}})
    diff = unified_diff(plan)
    assert diff.startswith("--- a/a.yaml\n+++ b/a.yaml\n@@ ") and "\n--- a/b.yaml\n+++ b/b.yaml\n" in diff
    assert diff == unified_diff(plan_annotations(tmp_path, edits[2:3] + edits[:2] + edits[3:]))
    assert apply(tmp_path, plan) == ["a.yaml", "b.yaml"]
    assert plan_annotations(tmp_path, edits) == EditPlan({}, (), ())


def test_two_edits_of_one_key_with_different_values_keep_the_first(tmp_path):
    (tmp_path / "f.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n")
    first, second = edit(0, "a", STATEFUL, "true"), edit(0, "a", STATEFUL, "false")
    plan = plan_annotations(tmp_path, [first, second])
    assert plan.skipped == ((second, f"another edit sets {STATEFUL} to 'true'"),)
    assert f"{STATEFUL}: 'true'" in plan.changes["f.yaml"][1]


def test_diff_marks_a_missing_final_newline(tmp_path):
    (tmp_path / "f.yaml").write_text(CORPUS["no-final-newline"][0])
    diff = unified_diff(plan_annotations(tmp_path, [edit(0, "cart")]))
    assert diff.endswith("+    kardinal.dev.service/dependencies: orders:http,redis:tcp\n"
                         "\\ No newline at end of file\n")
    assert "-  name: cart\n\\ No newline at end of file\n+  name: cart\n" in diff


def test_apply_keeps_the_mode_and_refuses_a_file_changed_since_the_plan(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n")
    os.chmod(path, 0o640)
    plan = plan_annotations(tmp_path, [edit(0, "a")])
    path.write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: a  # edited meanwhile\n")
    with pytest.raises(DevlaneError, match="changed since the edits were planned"):
        apply(tmp_path, plan)
    assert "edited meanwhile" in path.read_text()
    plan = plan_annotations(tmp_path, [edit(0, "a")])
    apply(tmp_path, plan)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["f.yaml"]  # no temporary file left


# --- generated documents ----------------------------------------------------------------------

_plain = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)
_value = st.one_of(st.sampled_from(["true", "false", "8080", "null", "~", "yes", "a: b", "- x", "#c", "orders:http",
                                    "a,b", "{x}", "[y]", "'q'", '"d"', "", " ", "é", "a\nb", "x\n"]),
                   st.text(alphabet="ab:,# -\n'\"{}[]&*!|>%@`", max_size=12))


@st.composite
def documents(draw):
    """A stream of Services written in one of many layouts, and the index of one to annotate."""
    step = draw(st.sampled_from([1, 2, 3, 4]))
    pad = " " * step
    brk = draw(st.sampled_from(["\n", "\r\n"]))
    count = draw(st.integers(1, 3))
    docs, names = [], []
    for i in range(count):
        name = f"svc{i}"
        names.append(name)
        quote = draw(st.sampled_from(["", "'", '"']))
        comment = draw(st.sampled_from(["", "  # c"]))
        labels = draw(st.sampled_from(["none", "block", "flow"]))
        annotations = draw(st.sampled_from(["none", "block", "flow", "empty", "empty-flow"]))
        flow_meta = draw(st.booleans())
        if flow_meta:
            parts = [f"name: {quote}{name}{quote}"]
            if labels != "none":
                parts.append("labels: {app: x}")
            if annotations in ("block", "flow"):
                parts.append("annotations: {a: b}")
            elif annotations == "empty-flow":
                parts.append("annotations: {}")
            meta = ["metadata: {" + ", ".join(parts) + "}" + comment]
        else:
            meta = ["metadata:" + comment, f"{pad}name: {quote}{name}{quote}{comment}"]
            if labels == "block":
                meta += [f"{pad}labels:", f"{pad * 2}app: x{comment}"]
            elif labels == "flow":
                meta += [f"{pad}labels: {{app: x}}"]
            if annotations == "block":
                meta += [f"{pad}annotations:", f"{pad * 2}a: b", f"{pad * 2}# last"]
            elif annotations == "flow":
                meta += [f"{pad}annotations: {{a: b}}"]
            elif annotations == "empty":
                meta += [f"{pad}annotations:"]
            elif annotations == "empty-flow":
                meta += [f"{pad}annotations: {{}}"]
        head = ["apiVersion: v1", "kind: Service"]
        tail = draw(st.sampled_from([[], ["spec:", f"{pad}ports:", f"{pad}- port: 80"], ["spec: {}"], ["# end"]]))
        body = draw(st.permutations([head[0], head[1], "META"]))
        lines = [x for part in body for x in (meta if part == "META" else [part])] + tail
        docs.append(lines)
    separator = draw(st.sampled_from(["---", "--- # next", "...\n---"]))
    out = []
    for i, lines in enumerate(docs):
        if i:
            out += separator.split("\n")
        elif draw(st.booleans()):
            out.append(separator.split("\n")[-1] + draw(st.sampled_from(["", " # first"])))
        out += lines
    text = brk.join(out) + draw(st.sampled_from([brk, ""]))
    target = draw(st.integers(0, count - 1))
    return text, target, names[target]


# Each example composes a file twice with ruamel.yaml (pure Python): 20 examples keep the fast suite light; the
# thorough profile (DEVLANE_HYPOTHESIS=thorough) runs its own count.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None,
          max_examples=min(settings.default.max_examples, 20) if settings.default.max_examples <= 50
          else settings.default.max_examples)
@given(documents(), _value, st.sampled_from([DEPS, "x/y", "a"]))
# a literal block whose first non-empty line starts with a blank would lose it (found by CI's fresh-seed pass)
@example(generated=("apiVersion: v1\nkind: Service\nmetadata:\n name: svc0\n", 0, "svc0"), value="\n :", key=DEPS)
def test_generated_documents_round_trip(tmp_path, generated, value, key):
    text, index, name = generated
    path = tmp_path / "f.yaml"
    path.write_bytes(text.encode())
    wanted = edit(index, name, key, value)
    plan = plan_annotations(tmp_path, [wanted])
    if plan.disagreements:  # the layout already had `a: b`
        assert key == "a" and value != "b" and not plan.changes
        return
    if plan.skipped:  # a value ending in a line break, last in a file without one, cannot be written to read back
        [(_, why)] = plan.skipped
        assert why == "the edited file would not read as the old objects plus the annotation", why
        assert value.endswith("\n") and not text.endswith(("\n", "\r")) and not plan.changes
        return
    if not plan.changes:
        assert key == "a" and value == "b"
        return
    before, after = plan.changes["f.yaml"]
    check_annotated(before, after, {index: {key: value}})
    path.write_bytes(after.encode())
    assert plan_annotations(tmp_path, [wanted]) == EditPlan({}, (), ())


def test_only_insertions_catches_a_changed_byte():
    only_insertions("a: 1\nb: 2\n", "a: 1\nc: 3\nb: 2\n")
    only_insertions("m: {a: 1}\n", "m: {a: 1, c: 3}\n")
    with pytest.raises(AssertionError):
        only_insertions("a: 1\nb: 2\n", "a: 1\nb: 3\n")
    with pytest.raises(AssertionError):
        only_insertions("a: 1\r\nb: 2\r\n", "a: 1\nb: 2\r\n")
