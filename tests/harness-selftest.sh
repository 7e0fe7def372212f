#!/usr/bin/env bash
# The harness must turn a failing guest test, a guest panic and a guest hang
# into a failed run. Boots the fast kernel three times with suites that do
# exactly that and passes only if every one of them is reported as a failure.
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
echo "harness selftest: $pass passed, $fail failed"
[ $fail -eq 0 ]
