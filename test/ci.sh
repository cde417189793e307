#!/usr/bin/env bash
# What `.ci/run` runs (`npm run test:ci`): the files `npm test` runs, and the upstream binaries they need built, arranged
# for a 2-core machine on which the suite mostly waits (docs/real-cluster.md#ci-time):
#
#   1. `npm run kube:build` (niced) beside the type check and one mocha run of every test file that needs no upstream
#      binary (it imports nothing from test/kube/);
#   2. then the files that run upstream binaries (they import test/kube/), each in a mocha process of its own, in
#      TEST_LANES lanes (default 2) that take the next file from one queue, the longest first.
#
# Every file still runs once, with the options of .mocharc.json; the files of step 2 are independent worlds (each its
# own run folder, emulator, network namespace or, for the few on the host's network, its lane's block of ports, and for
# real nodes cgroup roots named after its process: test/kube/). Each file's output
# is printed whole when it ends, then a table of the files, their counts and seconds. Exits non-zero when the build, the
# type check or any file fails.
set -euo pipefail
cd "$(dirname "$0")/.."

lanes="${TEST_LANES:-2}"
[[ "$lanes" =~ ^[1-9][0-9]*$ ]] || { echo "test:ci: TEST_LANES must be a positive whole number, not '$lanes'" >&2; exit 2; }
# .mocharc.json's options, without its spec (a file list on the command line is added to a config's spec, not used instead);
# --forbid-only: an `.only` left in one file would otherwise silently skip every other file of the same mocha run
mocha=(npx mocha --no-config -r ts-node/register/transpile-only --extension ts --timeout 60000 --exit --forbid-only)
out="$(mktemp -d "${TMPDIR:-/tmp}/alicloud-kubeadm-ci-XXXXXX")"

# A file needs the binaries when it imports test/kube/, itself or through another module of test/ (followed to the end;
# only a "yes" is remembered, as a "no" found inside an import cycle may be cut short).
# shellcheck disable=SC2016 # JavaScript, not shell
classify='
const fs = require("fs"), path = require("path");
const kubeDir = path.resolve("test/kube"), testDir = path.resolve("test");
const yes = new Set();
function needsKube(file, seen = new Set()) {
  if (yes.has(file)) return true;
  if (seen.has(file) || !fs.existsSync(file)) return false;
  seen.add(file);
  const text = fs.readFileSync(file, "utf8");
  for (const m of text.matchAll(/(?:from|import|require)\s*\(?\s*["\x27`](\.[^"\x27`]+)["\x27`]/g)) {
    const target = path.resolve(path.dirname(file), m[1]).replace(/\.[jt]s$/, "");
    if (target === kubeDir || target.startsWith(kubeDir + path.sep) ||
        (target.startsWith(testDir + path.sep) && (needsKube(target + ".ts", seen) || needsKube(path.join(target, "index.ts"), seen)))) {
      yes.add(file);
      return true;
    }
  }
  return false;
}
for (const f of process.argv.slice(1)) console.log((needsKube(path.resolve(f)) ? "kube " : "plain ") + f);
'
mapfile -t files < <(find test -name '*.test.ts' | LC_ALL=C sort)
classes="$(node -e "$classify" "${files[@]}")" # a failing walk stops the run here (set -e), not with files left out
kube=() plain=()
while read -r kind f; do
  if [[ $kind == kube ]]; then kube+=("$f"); else plain+=("$f"); fi
done <<<"$classes"
if ((${#kube[@]} + ${#plain[@]} != ${#files[@]} || ${#plain[@]} == 0)); then
  echo "test:ci: classified ${#plain[@]} + ${#kube[@]} of ${#files[@]} test files; every file must be one or the other" >&2
  exit 2
fi
# The longest first, so the lanes end together (measured on a cold 2-core run; the order only decides the balance: a
# file not named here runs after these, in name order).
longest=(
  test/realNodeSecondMasterUpgrade.test.ts test/realClusterAutoscaler.test.ts test/realNodesRotation.test.ts
  test/realClusterRestore.test.ts test/realNodes.test.ts test/realNodeControlPlaneUpgrade.test.ts
  test/realClusterRemoval.test.ts test/realClusterUse.test.ts test/realClusterMemberReplacement.test.ts
  test/realClusterStorageUpgrade.test.ts test/realClusterAdmission.test.ts
)
queue=()
for f in "${longest[@]}"; do [[ " ${kube[*]} " == *" $f "* ]] && queue+=("$f"); done
for f in "${kube[@]}"; do [[ " ${queue[*]} " == *" $f "* ]] || queue+=("$f"); done

echo "test:ci: ${#plain[@]} files beside kube:build, then ${#kube[@]} files with upstream binaries in $lanes lanes (logs in $out)"

# --- 1: the build beside the type check and the files that need no binary -------------------------------------------
start=$SECONDS
( t0=$SECONDS; rc=0; nice -n 10 npm run kube:build >"$out/kube-build.log" 2>&1 || rc=$?
  echo "$rc $((SECONDS - t0))" >"$out/kube-build.rc" ) &
build=$!
plain_rc=0
t0=$SECONDS
npm run typecheck || plain_rc=$?
if [[ $plain_rc == 0 ]]; then
  "${mocha[@]}" "${plain[@]}" 2>&1 | tee "$out/plain.log" || plain_rc=$?
fi
plain_s=$((SECONDS - t0))
wait "$build" || true
cat "$out/kube-build.log"
read -r build_rc build_s <"$out/kube-build.rc"
echo "test:ci: kube:build took ${build_s} s (rc $build_rc); the type check and ${#plain[@]} files ${plain_s} s (rc $plain_rc)"
if [[ $build_rc != 0 ]]; then
  echo "test:ci: kube:build failed (above): the ${#kube[@]} files that need its binaries did not run" >&2
  exit 1
fi

# --- 2: the files with upstream binaries, in lanes ----------------------------------------------------------------
t0=$SECONDS
printf '%s\n' "${queue[@]}" >"$out/queue"
: >"$out/results"
take() { # the next file of the queue, or nothing when it is empty
  # shellcheck disable=SC2016 # the inner shell expands them
  flock "$out/queue.lock" bash -c 'f=$(head -n 1 "$1"); [[ -n "$f" ]] || exit 1; sed -i 1d "$1"; echo "$f"' _ "$out/queue"
}
lane() {
  local f log rc s
  while f="$(take)"; do
    log="$out/$(basename "$f").log"
    s=$SECONDS; rc=0
    TEST_LANE=$1 "${mocha[@]}" "$f" >"$log" 2>&1 || rc=$? # TEST_LANE: the lane's own ports (test/kube/cluster.ts)
    echo "$f $rc $((SECONDS - s)) lane$1" >>"$out/results"
    flock "$out/print.lock" cat "$log"
  done
}
pids=()
for ((i = 1; i <= lanes; i++)); do lane "$i" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || true; done
kube_s=$((SECONDS - t0))

# --- the table ------------------------------------------------------------------------------------------------------
count() { grep -oE "^ +[0-9]+ $2" "$1" | tail -n 1 | grep -oE '[0-9]+' || echo 0; }
failed=0 passing=0 failing=0 pending=0
failed_files=()
printf '\ntest:ci: %-48s %4s %8s %8s %8s %6s\n' file rc passing failing pending s
while read -r f rc s ln; do
  log="$out/$(basename "$f").log"
  p=$(count "$log" passing) x=$(count "$log" failing) n=$(count "$log" pending)
  passing=$((passing + p)) failing=$((failing + x)) pending=$((pending + n))
  [[ $rc == 0 ]] || { failed=$((failed + 1)); failed_files+=("$f"); }
  printf 'test:ci: %-48s %4s %8s %8s %8s %6s %s\n' "$f" "$rc" "$p" "$x" "$n" "$s" "$ln"
done < <(sort -k3,3nr "$out/results")
if [[ -f "$out/plain.log" ]]; then
  p=$(count "$out/plain.log" passing) x=$(count "$out/plain.log" failing) n=$(count "$out/plain.log" pending)
  passing=$((passing + p)) failing=$((failing + x)) pending=$((pending + n))
  printf 'test:ci: %-48s %4s %8s %8s %8s %6s\n' "(${#plain[@]} files without binaries)" "$plain_rc" "$p" "$x" "$n" "$plain_s"
fi
ran=$(wc -l <"$out/results")
echo "test:ci: $passing passing, $failing failing, $pending pending; step 1 $((t0 - start)) s, step 2 $kube_s s, in all $((SECONDS - start)) s"
if [[ $plain_rc != 0 || $failed != 0 || $ran != "${#kube[@]}" ]]; then
  echo "test:ci: FAILED: the type check or files without binaries rc $plain_rc; $failed of $ran files with binaries failed (of ${#kube[@]}): ${failed_files[*]:-none}" >&2
  exit 1
fi
