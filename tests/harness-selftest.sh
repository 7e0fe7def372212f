#!/usr/bin/env bash
# The harness must turn a failing guest test, a guest panic and a guest hang
# into a failed run, and stop a test that outlives its budget with the
# kernel's task states on the console. Boots the fast kernel with suites that
# do exactly that and passes only if every one of them is reported as a failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pass=0 fail=0

expect_failure() {
	local suite=$1 timeout=$2 out
	out=$("$root/guest/run-guest.sh" -k fast -s "$suite" -t "$timeout" 2>&1)
	if [ $? -ne 0 ]; then
		pass=$((pass + 1))
		echo "ok - $suite fails the run: $(echo "$out" | grep -m1 -oE 'FAIL: .*')"
	else
		fail=$((fail + 1))
		echo "not ok - $suite was reported as a pass"
		echo "$out" | tail -5
	fi
}

expect_failure selftest-fail 120
expect_failure selftest-panic 120
expect_failure selftest-hang 30
# a stuck test: stopped by the guest after its budget, long before the host
# timeout, with the blocked tasks and every task's state shown
log=${DS_BUILD:-$root/build}/logs/fast-selftest-stuck.log
t0=$(date +%s)
DS_TEST_BUDGET=5 expect_failure selftest-stuck 300
missing=
for want in 'not ok 1 - selftest-stuck' 'still running after 5s' 'sysrq: Show State' \
	'DEFERSTACK-RESULT: 0 passed, 1 failed'; do
	grep -aqF "$want" "$log" || missing="$missing '$want'"
done
if [ -z "$missing" ]; then
	pass=$((pass + 1))
	echo "ok - the stuck test was stopped after its budget, task states shown ($(( $(date +%s) - t0 ))s in all)"
else
	fail=$((fail + 1))
	echo "not ok - the stuck test was not stopped by its budget (console: $log)"
	echo "    not on the console:$missing"
	grep -anE 'selftest-stuck|still running|Show State|DEFERSTACK-RESULT' "$log" | sed 's/^/    /' | head -10
fi
echo "harness selftest: $pass passed, $fail failed"
[ $fail -eq 0 ]
