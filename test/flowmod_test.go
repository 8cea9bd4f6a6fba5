package test

import (
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/testenv"
)

// TestFlowModWordsThroughTheCLI: the words of OpenFlow's FLOW_MOD that
// ovs-ofctl takes, through the CLI and a daemon forwarding pings:
// send_flow_rem is kept and shown (and survives a restart), check_overlap
// refuses an overlapping rule, reset_counts zeroes the counters of what
// mod-flows changes, out_port selects for dump-flows and del-flows.
func TestFlowModWordsThroughTheCLI(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	a := addNSPort(t, d, n, br, 1, false)
	b := addNSPort(t, d, n, br, 2, false)

	d.x(t, "add-flow", br, "send_flow_rem,priority=100,ip,nw_dst="+b.addr+",actions=output:"+b.name)
	d.x(t, "add-flow", br, "priority=100,ip,nw_dst="+a.addr+",actions=output:"+a.name)
	waitPing(t, a.ns, b.addr, 5*time.Second)
	ping(t, a.ns, b.addr, 56, 2)
	if line := d.x(t, "dump-flows", br, "ip,nw_dst="+b.addr); !strings.Contains(line, " send_flow_rem idle_age=") {
		t.Errorf("dump-flows of a send_flow_rem rule: %q, want the flag before idle_age as ovs-ofctl prints it", line)
	}

	stderr, code := d.xErr(t, "add-flow", br, "check_overlap,priority=100,ip,actions=drop")
	if code != 1 || !strings.Contains(stderr, "overlaps it") {
		t.Errorf("add-flow check_overlap of an overlapping rule: exit %d, %q", code, stderr)
	}
	d.x(t, "add-flow", br, "check_overlap,priority=100,arp,actions=NORMAL")

	if got := flowPackets(t, d, br, "nw_dst="+b.addr+" "); got < 3 {
		t.Fatalf("the rule to %s counted %d packets, want at least 3", b.addr, got)
	}
	d.x(t, "mod-flows", br, "reset_counts,ip,nw_dst="+b.addr+",actions=output:"+b.name)
	if got := flowPackets(t, d, br, "nw_dst="+b.addr+" "); got != 0 {
		t.Errorf("after mod-flows reset_counts: %d packets, want 0", got)
	}
	if got := flowPackets(t, d, br, "nw_dst="+a.addr+" "); got < 3 {
		t.Errorf("mod-flows reset_counts zeroed another rule: %d packets", got)
	}

	if out := d.x(t, "dump-flows", br, "out_port="+b.name); strings.Count(out, "\n") != 1 || !strings.Contains(out, "nw_dst="+b.addr) {
		t.Errorf("dump-flows out_port=%s:\n%s\nwant the one rule to it", b.name, out)
	}
	if out := d.x(t, "dump-flows", br, "out_port=NORMAL"); strings.Count(out, "\n") != 2 {
		t.Errorf("dump-flows out_port=NORMAL:\n%s\nwant the arp rule and the default", out)
	}

	d.stop(t, 9)
	d.start(t)
	if line := d.x(t, "dump-flows", br, "ip,nw_dst="+b.addr); !strings.Contains(line, "send_flow_rem") {
		t.Errorf("after a restart: %q, want the flag kept", line)
	}
	d.x(t, "del-flows", br, "out_port="+a.name)
	if out := d.x(t, "dump-flows", br); strings.Contains(out, "nw_dst="+a.addr) || !strings.Contains(out, "nw_dst="+b.addr) {
		t.Errorf("after del-flows out_port=%s:\n%s\nwant the rule to %s gone and the others kept", a.name, out, a.name)
	}
}
