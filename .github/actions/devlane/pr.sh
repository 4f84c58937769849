#!/usr/bin/env bash
# shellcheck disable=SC2016  # the backticks in printf formats are Markdown code spans, not expansions
# devlane's pull-request life, one verb per GitHub event. The composite action (action.yml) runs it with every
# input in the environment as INPUT_* (never a ${{ }} expression inside a script), and tests/e2e/test_pr_life.py
# runs exactly this file. Needs devlane and git on PATH, and gh for the comment.
#
#   pr.sh open         the PR's lane: the diff comment (one sticky comment per flow), then the lane on the lanes
#                      branch (provision, render); a fork's run publishes nothing and leaves the comment in $out
#   pr.sh close        the PR's lane deleted from the lanes branch (each plugin's delete_flow), the comment says so
#   pr.sh gc           every lane whose pull request is no longer open, and every expired one, deleted
#   pr.sh comment DIR  post the comment a fork's run left in DIR (the workflow_run follow-up), after checking it
set -euo pipefail

verb=${1:?usage: pr.sh open|close|gc|comment DIR}
repo=${INPUT_REPO:-.}
pr=${INPUT_PR:-}
flow=${INPUT_FLOW:-}
base=${INPUT_BASE:-}
lanes=${INPUT_LANES_BRANCH:-}
remote=${INPUT_REMOTE:-origin}
fail_on=${INPUT_FAIL_ON:-problems}
out=${INPUT_OUT:-devlane-out}
if [ -z "$flow" ] && [ -n "$pr" ]; then flow="pr-$pr"; fi

die() {
    echo "devlane action: error: $*" >&2
    exit 1
}

case $fail_on in
    problems | changes | never) ;;
    *) die "fail-on '$fail_on': expected problems, changes or never (the CLI's --fail-on)" ;;
esac
if [ "$verb" != comment ] && [ "$verb" != gc ] && [ -z "$flow" ]; then
    die "no flow id: set the input flow, or pr (the pull request's number)"
fi
mkdir -p "$out"

lane_args=()
if [ -n "$lanes" ]; then lane_args=(--lanes-branch "$lanes" --remote "$remote"); fi

# The push to the lanes branch authenticates with the job's token, in the environment of the git processes devlane
# runs: nothing is written to .git/config (checkout runs with persist-credentials: false), and plugins never see it.
if [ -n "${GH_TOKEN:-}" ] && [ -n "$lanes" ]; then
    basic=$(printf 'x-access-token:%s' "$GH_TOKEN" | base64 | tr -d '\n')
    echo "::add-mask::$basic"
    export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="http.${GITHUB_SERVER_URL:-https://github.com}/.extraheader"
    export GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $basic"
fi

# The flow's targets, as the CLI takes them: auto (what the pull request changed) or NAME=IMAGE lines.
targets=()
if [ "$verb" != open ]; then
    :  # close, gc and comment act on lanes that exist: no targets
elif [ "${INPUT_SERVICES:-auto}" = auto ]; then
    [ -n "${INPUT_IMAGE_TEMPLATE:-}" ] || die "services auto needs the input image-template (the image CI builds)"
    targets=(--services auto --base "$base" --image-template "$INPUT_IMAGE_TEMPLATE")
    if [ -n "$pr" ]; then targets+=(--pr "$pr"); fi
else
    while IFS= read -r line; do
        if [ -n "$line" ]; then targets+=(--service "$line"); fi
    done <<<"$INPUT_SERVICES"
fi
trusted=()  # the base's .devlane.yaml may relax what the pull request's cannot
if [ -n "${INPUT_TRUSTED_REF:-$base}" ]; then trusted=(--trusted-ref "${INPUT_TRUSTED_REF:-$base}"); fi

marker() { printf '<!-- devlane:flow=%s -->' "$flow"; }

json_field() {  # json_field FILE EXPRESSION: a value of a JSON file devlane wrote
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d, "json": json}))' "$1" "$2"
}

fenced() {  # fenced FILE: its last lines in a code fence longer than any backtick run in them
    local text fence='```'
    text=$(tail -n 40 "$1")
    while [[ $text == *"$fence"* ]]; do fence="$fence\`"; done
    printf '%s\n%s\n%s\n' "$fence" "$text" "$fence"
}

# The sticky comment: the one that starts with the flow's marker is replaced (PATCH), else one is made (POST).
post_comment() {
    local body=$1 id
    if [ "${INPUT_COMMENT:-true}" != true ]; then return 0; fi
    id=$(gh api "repos/$GITHUB_REPOSITORY/issues/$pr/comments" --paginate \
        --jq ".[] | select(.body | startswith(\"$(marker)\")) | .id" | head -n 1)
    if [ -n "$id" ]; then
        gh api -X PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$id" -F "body=@$body" >/dev/null
    elif [ "${2:-}" != existing ]; then
        gh api -X POST "repos/$GITHUB_REPOSITORY/issues/$pr/comments" -F "body=@$body" >/dev/null
    fi
}

output() {  # output NAME VALUE: a step output, when run by the action
    if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "$1=$2" >>"$GITHUB_OUTPUT"; fi
}

open_pr() {
    [ -n "$base" ] || die "no base: set the input base (the pull request's base branch or commit)"
    local body="$out/comment.md" status=0 diff_args publishing=false
    output comment-body-file "$PWD/$body"
    if [ "${INPUT_FORK:-false}" != true ] && [ -n "$lanes" ]; then publishing=true; fi
    # External plugins first, for real, their records committed to the lanes branch at once: what they made stays
    # deletable whatever happens next, and the diff and the render replay them
    if $publishing && ! devlane provision "$repo" --flow "$flow" "${targets[@]}" "${trusted[@]}" "${lane_args[@]}" \
        2>"$out/provision.log"; then
        failed "could not provision the lane" "$out/provision.log"
    fi
    if $publishing; then cat "$out/provision.log" >&2; fi
    diff_args=(diff "$repo" --base "$base" --head HEAD --flow "$flow" "${targets[@]}" "${trusted[@]}"
        -o markdown --fail-on never --json-out "$out/diff.json")
    if $publishing; then diff_args+=("${lane_args[@]}"); fi
    if [ -n "${RUN_URL:-}" ]; then diff_args+=(--artifact-url "$RUN_URL"); fi
    devlane "${diff_args[@]}" >"$body" 2>"$out/diff.log" || status=$?
    cat "$out/diff.log" >&2
    if [ "$status" -ne 0 ]; then  # the diff printed the failure comment; a usage error printed none
        if ! head -n 1 "$body" | grep -qF "$(marker)"; then failed "could not render" "$out/diff.log"; fi
        post_comment "$body"
        exit 1
    fi
    output changed "$(json_field "$out/diff.json" 'str(d["changed"]).lower()')"
    output counts "$(json_field "$out/diff.json" 'json.dumps(d["counts"])')"
    if [ "${INPUT_FORK:-false}" = true ]; then
        printf '\n_Not published: a pull request from a fork renders without the repository'"'"'s secrets, and its lane is not deployed._\n' >>"$body"
        echo "$pr" >"$out/pr"
        echo "::notice::devlane: the comment of this fork's pull request is posted by the devlane comment workflow"
    elif $publishing; then
        publish "$body"
    fi
    post_comment "$body"
    case $fail_on in
        problems) if [ "$(json_field "$out/diff.json" 'len(d["problems"])')" != 0 ]; then exit 1; fi ;;
        changes) if [ "$(json_field "$out/diff.json" 'd["changed"]')" = True ]; then exit 1; fi ;;
    esac
}

failed() {  # failed WHAT LOG: the comment says what failed and shows the log's end; the job fails
    local body="$out/comment.md"
    { marker; printf '\n## devlane flow `%s`: ❌ %s\n\n' "$flow" "$1"; fenced "$2"; } >"$body"
    cat "$2" >&2
    post_comment "$body"
    exit 1
}

publish() {  # the rendered flow committed to the lanes branch; the comment says where
    local body=$1 render_args action commit
    render_args=(render "$repo" --flow "$flow" "${targets[@]}" "${trusted[@]}" "${lane_args[@]}"
        --validate "${INPUT_VALIDATE:-strict}" --kube-version "${INPUT_KUBE_VERSION:-1.31}" --json-out "$out/lane.json")
    if [ -n "${INPUT_TTL:-}" ]; then render_args+=(--ttl "$INPUT_TTL"); fi
    devlane "${render_args[@]}" 2>"$out/render.log" || failed "could not publish the lane" "$out/render.log"
    cat "$out/render.log" >&2
    action=$(json_field "$out/lane.json" 'd["action"]')
    commit=$(json_field "$out/lane.json" 'd["commit"] or ""')
    output lane-commit "$commit"
    case $action in
        written) printf '\nLane committed to `%s` at `%s`.\n' "$lanes" "${commit:0:12}" >>"$body" ;;
        unchanged) printf '\nLane unchanged on `%s` (at `%s`).\n' "$lanes" "${commit:0:12}" >>"$body" ;;
        removed) printf '\nNo lane: the lane of an earlier push was removed from `%s`.\n' "$lanes" >>"$body" ;;
        absent) printf '\nNo lane on `%s`.\n' "$lanes" >>"$body" ;;
    esac
}

close_pr() {
    local body="$out/comment.md"
    if [ -n "$lanes" ]; then
        devlane delete "$repo" --flow "$flow" "${lane_args[@]}"
    fi
    { marker; printf '\n## devlane flow `%s`: lane removed (pull request closed)\n' "$flow"; } >"$body"
    post_comment "$body" existing
}

gc_lanes() {
    [ -n "$lanes" ] || die "gc needs the input lanes-branch: the lanes live there"
    gh pr list --repo "$GITHUB_REPOSITORY" --state open --label "${INPUT_LABEL:-devlane-preview}" --limit 1000 \
        --json number --jq '.[] | "pr-\(.number)"' >"$out/open-prs"
    devlane gc "$repo" "${lane_args[@]}" --keep-file "$out/open-prs" --expired
}

comment_from() {  # the follow-up of a fork's run: its artifact is untrusted, so only a well-formed comment of the
    # same pull request, made for its current head, is posted
    local dir=${1:?usage: pr.sh comment DIR} head
    pr=$(cat "$dir/pr")
    [[ $pr =~ ^[0-9]+$ ]] || die "the artifact's pull request number is not a number"
    flow="pr-$pr"
    [ "$(head -n 1 "$dir/comment.md")" = "$(marker)" ] || die "the artifact's comment is not flow $flow's"
    head=$(gh api "repos/$GITHUB_REPOSITORY/pulls/$pr" --jq .head.sha)
    [ "$head" = "${INPUT_HEAD_SHA:-}" ] || die "pull request $pr moved on since the run that made this comment"
    post_comment "$dir/comment.md"
}

case $verb in
    open) open_pr ;;
    close) close_pr ;;
    gc) gc_lanes ;;
    comment) comment_from "${2:-}" ;;
    *) die "unknown verb '$verb': expected open, close, gc or comment DIR" ;;
esac
