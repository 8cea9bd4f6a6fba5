package vswitch

import (
	"bytes"
	"net"
	"testing"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
)

// rules parses flows in ovs-ofctl syntax into a table.
func rules(t testing.TB, flows ...string) *flow.Table {
	t.Helper()
	var rs []flow.Rule
	for _, text := range flows {
		r, err := flow.ParseRule(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return table(rs...)
}

func TestRulesBeatNormalAndMissesDrop(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "priority=100,in_port=1,actions=output:3", "priority=0,in_port=2,actions=NORMAL"))
	bcast := frame(broadcast, mac(1), "from 1")
	ports[0].Inject(bcast)
	ports[2].Inject(frame(broadcast, mac(3), "from 3: no rule"))
	forwardAll(f)
	wantFrames(t, ports[1]) // NORMAL would have flooded here
	wantFrames(t, ports[2], bcast)
	wantFrames(t, ports[0])
}

func TestOutputToInputPortNeedsInPort(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "in_port=1,actions=output:1", "in_port=2,actions=IN_PORT"))
	a, b := frame(broadcast, mac(1), "a"), frame(broadcast, mac(2), "b")
	ports[0].Inject(a)
	ports[1].Inject(b)
	forwardAll(f)
	wantFrames(t, ports[0])
	wantFrames(t, ports[1], b)
}

func TestOutputBeforeRewriteSendsTheOriginal(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "in_port=1,actions=output:2,mod_dl_dst:02:00:00:00:00:99,output:3"))
	orig := frame(mac(7), mac(1), "x")
	ports[0].Inject(orig)
	forwardAll(f)
	rewritten := bytes.Clone(orig)
	copy(rewritten[0:6], []byte{2, 0, 0, 0, 0, 0x99})
	wantFrames(t, ports[1], orig)
	wantFrames(t, ports[2], rewritten)
}

func TestRewriteThenOutputKeepsChecksums(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "udp,actions=mod_nw_dst:10.0.0.9,mod_tp_dst:53,dec_ttl,output:2"))
	ports[0].Inject(udpFrame(t, mac(2), mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 2), 1000, 5000, []byte("query")))
	forwardAll(f)
	want := udpFrame(t, mac(2), mac(1), net.IPv4(10, 0, 0, 1), net.IPv4(10, 0, 0, 9), 1000, 53, []byte("query"))
	ip := header.IPv4(want[header.EthernetLen:])
	ip.SetTTL(63)
	ip.SetChecksum(ip.ComputeChecksum())
	wantFrames(t, ports[1], want)
}

func TestRuleCountersAddOncePerBatch(t *testing.T) {
	ports := newPorts(2)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "in_port=1,actions=output:2"))
	for range 10 {
		ports[0].Inject(frame(broadcast, mac(1), "0123456789"))
	}
	forwardAll(f)
	e := f.flows.Load().Entries()[0]
	packets, bytes, _ := e.Stats()
	if packets != 10 || bytes != 10*uint64(len(frame(broadcast, mac(1), "0123456789"))) {
		t.Fatalf("rule counted %d packets, %d bytes; want 10 frames", packets, bytes)
	}
}

func TestNewTableVersionTakesEffectAtOnce(t *testing.T) {
	ports := newPorts(3)
	f := testForwarder(t, 64, ports...)
	f.flows.Publish(rules(t, "in_port=1,actions=output:2"))
	fr := frame(broadcast, mac(1), "x")
	ports[0].Inject(fr)
	forwardAll(f) // cached: in_port=1 → output:2
	f.flows.Publish(rules(t, "in_port=1,actions=output:3"))
	ports[0].Inject(fr)
	forwardAll(f)
	wantFrames(t, ports[1], fr)
	wantFrames(t, ports[2], fr)
}
