#!/usr/bin/env bash
# FLOW_MOD throughput over the wire: N flows sent with
# `ovs-ofctl -O OpenFlow13 add-flows` over TCP to xswitch's ptcp: target and
# to a private Open vSwitch (its userspace datapath, a ptcp: controller
# target) in the same run, ROUNDS times each, alternating. Each switch runs
# under taskset -c 1 with its default settings, ovs-ofctl on CPU 0. Prints
# each round's seconds and flows/s, the median, and each daemon's RSS after
# its last round. Needs root, xswitch built (XSWITCH, default ./xswitch)
# and Open vSwitch installed; leaves nothing behind.
#
#   go build -o xswitch ./cmd/xswitch && sudo test/scripts/flowmod-bench.sh 100000 3
set -euo pipefail

n=${1:-100000}
rounds=${2:-3}
xswitch=$(realpath "${XSWITCH:-./xswitch}")
dir=$(mktemp -d /tmp/xswitch-flowmod-XXXXXX)
pids=()
cleanup() {
	[[ -n "${KEEP_LOG:-}" ]] && cp "$dir/x.log" "$KEEP_LOG"
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$dir"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# N distinct flows of the kind a controller installs: a priority, an
# IPv4 destination and an output.
awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "priority=%d,ip,nw_dst=10.%d.%d.%d,actions=output:%d\n", 100 + i % 100, int(i / 65536) % 256, int(i / 256) % 256, i % 256, 1 + i % 4 }' >"$dir/flows"

# xswitch: its daemon with the default flags, one bridge, a ptcp target.
xport=$(free_port)
taskset -c 1 "$xswitch" daemon --sock "$dir/x.sock" --db "$dir/x.db" ${XSWITCH_DAEMON_ARGS:-} >"$dir/x.log" 2>&1 &
xpid=$!
pids+=("$xpid")
for _ in $(seq 50); do "$xswitch" --sock "$dir/x.sock" show >/dev/null 2>&1 && break; sleep 0.1; done
"$xswitch" --sock "$dir/x.sock" add-br fmbr
"$xswitch" --sock "$dir/x.sock" set-controller fmbr "ptcp:$xport:127.0.0.1"

# Open vSwitch: a private ovsdb-server and ovs-vswitchd, as xswitch bench
# runs them, with a netdev bridge and a ptcp target.
export OVS_RUNDIR="$dir" OVS_DBDIR="$dir" OVS_LOGDIR="$dir" OVS_SYSCONFDIR="$dir" OVS_PKGDATADIR="$dir"
ovsdb-tool create "$dir/conf.db" /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server "$dir/conf.db" --remote="punix:$dir/db.sock" --pidfile="$dir/ovsdb-server.pid" --log-file="$dir/ovsdb-server.log" &
pids+=($!)
vsctl() { ovs-vsctl --db="unix:$dir/db.sock" "$@"; }
for _ in $(seq 50); do vsctl --no-wait show >/dev/null 2>&1 && break; sleep 0.1; done
vsctl --no-wait init
taskset -c 1 ovs-vswitchd "unix:$dir/db.sock" --pidfile="$dir/ovs-vswitchd.pid" --log-file="$dir/ovs-vswitchd.log" &
opid=$!
pids+=("$opid")
oport=$(free_port)
vsctl add-br fmbr -- set bridge fmbr datapath_type=netdev protocols=OpenFlow13
vsctl set-controller fmbr "ptcp:$oport:127.0.0.1"

wait_target() {
	for _ in $(seq 100); do ovs-ofctl -O OpenFlow13 show "$1" >/dev/null 2>&1 && return; sleep 0.1; done
	echo "no answer at $1" >&2
	exit 1
}
wait_target "tcp:127.0.0.1:$xport"
wait_target "tcp:127.0.0.1:$oport"

# one round: empty the table, time add-flows, check the count.
round() {
	local name=$1 target=$2
	ovs-ofctl -O OpenFlow13 del-flows "$target"
	local start end count
	start=$(date +%s.%N)
	taskset -c 0 ovs-ofctl -O OpenFlow13 add-flows "$target" "$dir/flows"
	end=$(date +%s.%N)
	count=$(ovs-ofctl -O OpenFlow13 dump-aggregate "$target" | sed -n 's/.*flow_count=\([0-9]*\).*/\1/p')
	if [[ "$count" != "$n" ]]; then
		echo "$name: $count flows after add-flows, want $n" >&2
		exit 1
	fi
	python3 -c "import sys; s=float(sys.argv[2])-float(sys.argv[1]); print(f'{s:.3f} {float(sys.argv[3])/s:.0f}')" "$start" "$end" "$n"
}

declare -A secs
for r in $(seq "$rounds"); do
	for c in xswitch ovs; do
		if [[ $c == xswitch ]]; then t="tcp:127.0.0.1:$xport"; else t="tcp:127.0.0.1:$oport"; fi
		read -r s rate < <(round "$c" "$t")
		secs[$c]+="$s "
		echo "round $r/$rounds $c: $n flows in $s s ($rate flows/s)"
	done
done

rss() { awk '/VmRSS/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$1/status"; }
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
xm=$(median "${secs[xswitch]}")
om=$(median "${secs[ovs]}")
printf '\n| switch | median s | flows/s | RSS after |\n|---|---|---|---|\n'
calc() { python3 -c "print($1)"; }
printf '| xswitch | %s | %.0f | %s |\n' "$xm" "$(calc "$n / $xm")" "$(rss "$xpid")"
printf '| ovs-vswitchd | %s | %.0f | %s |\n' "$om" "$(calc "$n / $om")" "$(rss "$opid")"
printf 'xswitch takes %.2fx the time Open vSwitch takes\n' "$(calc "$xm / $om")"
