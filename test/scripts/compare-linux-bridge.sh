#!/bin/bash
# A rough side-by-side of xswitch and the Linux bridge between the same two
# namespaces, alternating, three rounds: ping RTT (500 pings, 2 ms apart),
# UDP with 64-byte payloads from iperf3 (sender-bound: iperf3 sends about
# 0.5-0.9 Mpps, so this shows loss, not the switch's ceiling) and TCP
# throughput. Needs root and iperf3. The proper benchmark, with an XDP
# traffic generator and OVS, is a later piece of work.
#
#   go build -o /tmp/xswitch ./cmd/xswitch && test/scripts/compare-linux-bridge.sh /tmp/xswitch
set -u
X=${1:?usage: $0 PATH-TO-XSWITCH-BINARY}
T=$(mktemp -d)
tag=$RANDOM
A=xca$tag; B=xcb$tag
cleanup() {
  [ -n "${DPID:-}" ] && kill $DPID 2>/dev/null && wait $DPID 2>/dev/null
  ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null
  ip link del xlb$tag 2>/dev/null; ip link del xpa$tag 2>/dev/null; ip link del xpb$tag 2>/dev/null
  rm -rf $T
}
trap cleanup EXIT
ip netns add $A; ip netns add $B
ip -n $A link set lo up; ip -n $B link set lo up
rtt() { ip netns exec $A ping -q -c ${2:-500} -i 0.002 -s 56 $1 | tail -1; }
udp() { # pps delivered: iperf3 UDP 64-byte payload, unlimited rate, 5 s
  ip netns exec $B iperf3 -s -1 -p 5299 >/dev/null 2>&1 & sp=$!
  sleep 0.5
  ip netns exec $A iperf3 -c $1 -p 5299 -u -b 0 -l 64 -t 5 -J 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); s=d["end"]["sum"]; print("udp64: sent %.0f pps, lost %.1f%%, received %.0f pps" % (s["packets"]/s["seconds"], s["lost_percent"], (s["packets"]-s["lost_packets"])/s["seconds"]))'
  wait $sp
}
tcp() { ip netns exec $B iperf3 -s -1 -p 5298 >/dev/null 2>&1 & sp=$!; sleep 0.5; ip netns exec $A iperf3 -c $1 -p 5298 -t 5 -J | python3 -c 'import json,sys; d=json.load(sys.stdin); print("tcp: %.2f Gbit/s" % (d["end"]["sum_received"]["bits_per_second"]/1e9))'; wait $sp; }

for round in 1 2 3; do
  # xswitch
  $X daemon --sock $T/s --db $T/db.json 2>$T/log & DPID=$!
  for i in $(seq 50); do $X --sock $T/s list-br >/dev/null 2>&1 && break; sleep 0.1; done
  $X --sock $T/s add-br br$tag
  $X --sock $T/s add-port br$tag xpa$tag --netns $A --address 10.77.0.1/24
  $X --sock $T/s add-port br$tag xpb$tag --netns $B --address 10.77.0.2/24
  ip netns exec $A ping -c 2 -q 10.77.0.2 >/dev/null
  echo "round $round xswitch: $(rtt 10.77.0.2)"; echo "round $round xswitch: $(udp 10.77.0.2)"; echo "round $round xswitch: $(tcp 10.77.0.2)"
  $X --sock $T/s del-br br$tag; kill $DPID; wait $DPID 2>/dev/null; DPID=; rm -f $T/db.json
  # linux bridge
  ip link add xlb$tag type bridge; ip link set xlb$tag up
  for n in a b; do
    ns=$A; [ $n = b ] && ns=$B
    ip link add xp$n$tag type veth peer name eth0 netns $ns
    ip link set xp$n$tag master xlb$tag up
    ip -n $ns link set eth0 up
  done
  ip -n $A addr add 10.77.0.1/24 dev eth0; ip -n $B addr add 10.77.0.2/24 dev eth0
  ip netns exec $A ping -c 2 -q 10.77.0.2 >/dev/null
  echo "round $round bridge:  $(rtt 10.77.0.2)"; echo "round $round bridge:  $(udp 10.77.0.2)"; echo "round $round bridge:  $(tcp 10.77.0.2)"
  ip link del xpa$tag; ip link del xpb$tag; ip link del xlb$tag
done
