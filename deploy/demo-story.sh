#!/usr/bin/env bash
# The README's scripted sequence on the demo's upstream (deploy/demo-setup.sh made it): a
# trunk push that passes, a later push that fails, its bisection to the culprit, a PR on the
# broken trunk whose only failure is the trunk's (pre_existing), a PR that breaks the build (a
# regression found before any card is used), and main moving on to a commit that breaks the
# build, bisected with builds alone. Needs `make run` in another
# terminal. Each step waits for its run (and the bisection) to end.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=var/demo
up=$demo/upstream
ctl=(build/crcrctl --cacert "$demo/tls.crt" --token-file "$demo/admin.token")
mkdir -p "$demo/story"

# delivery FILE SHA REF [PR BASE_SHA]: a CRCR delivery in the relay's direct form.
delivery() {
  python3 - "$@" <<'PY'
import json, sys
path, sha, ref = sys.argv[1:4]
cp = {"upstream_sha": sha, "ref": ref}
if len(sys.argv) > 5:
    cp["pr_number"], cp["base_sha"] = int(sys.argv[4]), sys.argv[5]
json.dump({"event_type": "pytorch-crcr", "client_payload": cp}, open(path, "w"))
PY
}
# send FILE: signs and posts it; prints the run id.
send() {
  local out
  out=$(build/crcrctl send --scheme standard-webhooks --secret-file "$demo/relay.whsec" --cacert "$demo/tls.crt" "$1")
  python3 -c 'import json,sys; t=sys.argv[1]; print(json.loads(t[t.index("{"):])["run_id"])' "$out"
}
# field RUN EXPR: a Python expression over the run `r` of GET /api/v1/runs/RUN.
field() { "${ctl[@]}" runs show "$1" --json | python3 -c "import json,sys; r=json.load(sys.stdin); print($2)"; }
# wait_for RUN EXPR: until EXPR is True (the runs take seconds; the bisection a minute or two).
wait_for() { until [[ $(field "$1" "$2") == True ]]; do sleep 1; done; }

main=($(git -C "$up" rev-list --reverse main))
good=${main[0]} bad=${main[23]}
echo "== 1. main at ${good:0:7} (commit 0): every tier passes"
delivery "$demo/story/push-good.json" "$good" refs/heads/main
run=$(send "$demo/story/push-good.json")
wait_for "$run" 'r["state"] in ("completed","cancelled")'
echo "run $run: $(field "$run" 'r["conclusion"] + ": " + r["reason"]')"

echo "== 2. main at ${bad:0:7} (commit 23): the smoke tier fails, and the regression is bisected"
delivery "$demo/story/push-bad.json" "$bad" refs/heads/main
bad_run=$(send "$demo/story/push-bad.json")
wait_for "$bad_run" '"bisect" in r and r["bisect"]["state"] != "running"'
"${ctl[@]}" runs show "$bad_run"
culprit=$(field "$bad_run" 'r["bisect"]["culprit"] or ""')
if [[ -n $culprit ]]; then
  echo "culprit: $(git -C "$up" log -1 --format='%h %s' "$culprit")"
else
  echo "no culprit: $(field "$bad_run" 'r["bisect"]["state"] + ": " + r["bisect"]["reason"]')"
fi

echo "== 3. PR 7 on the broken main: its only failing test fails on its base too"
delivery "$demo/story/pr.json" "$(git -C "$up" rev-parse pr-on-broken)" refs/pull/7/head 7 "$bad"
pr_run=$(send "$demo/story/pr.json")
wait_for "$pr_run" 'r["state"] in ("completed","cancelled")'
echo "run $pr_run: $(field "$pr_run" 'r["conclusion"] + ": " + r["reason"]')"
field "$pr_run" '"\n".join(json.dumps(j["evidence"]["pre_existing"]) for j in r["jobs"] if (j.get("evidence") or {}).get("pre_existing"))'
echo "statuses of PR 7's commit (var/demo/statuses.jsonl):"
grep "$(git -C "$up" rev-parse pr-on-broken)" "$demo/statuses.jsonl" | tail -n 3

echo "== 4. PR 8 changes the signature of a header the backend's extension uses: the build fails"
delivery "$demo/story/pr-build.json" "$(git -C "$up" rev-parse pr-breaks-build)" refs/pull/8/head 8 "$bad"
build_run=$(send "$demo/story/pr-build.json")
wait_for "$build_run" 'r["state"] in ("completed","cancelled")'
echo "run $build_run: $(field "$build_run" 'r["conclusion"] + ": " + r["reason"]')"
field "$build_run" '"\n".join(j["tier"] + ": " + j["state"] + " " + (j.get("conclusion") or "") + " " + (j.get("reason") or "") for j in r["jobs"])'

next=$(git -C "$up" rev-parse main-next)
echo "== 5. main moves on to ${next:0:7} (commit 29): the build breaks, and its regression is bisected"
delivery "$demo/story/push-next.json" "$next" refs/heads/main
next_run=$(send "$demo/story/push-next.json")
wait_for "$next_run" '"bisect" in r and r["bisect"]["state"] != "running"'
echo "run $next_run: $(field "$next_run" 'r["conclusion"] + ": " + r["reason"]')"
field "$next_run" '"\n".join("bisect run %d %s: %s" % (b["run_id"], b["sha"][:7], b["verdict"]) for b in r["bisect"]["runs"])'
culprit=$(field "$next_run" 'r["bisect"]["culprit"] or ""')
if [[ -n $culprit ]]; then
  echo "culprit: $(git -C "$up" log -1 --format='%h %s' "$culprit")"
else
  echo "no culprit: $(field "$next_run" 'r["bisect"]["state"] + ": " + r["bisect"]["reason"]')"
fi
