package test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/internal/testenv"
)

// jsonTables is dump-tables' JSON answer.
type jsonTables struct {
	Bridge string `json:"bridge"`
	Tables []struct {
		Table   int    `json:"table"`
		Active  int    `json:"active"`
		Lookups uint64 `json:"lookup"`
		Matched uint64 `json:"matched"`
	} `json:"tables"`
}

// setPipeline replaces a bridge's rules with flows, given to add-flows on
// its standard input.
func setPipeline(t *testing.T, d *daemon, br string, flows ...string) {
	t.Helper()
	d.x(t, "del-flows", br)
	d.xInput(t, strings.Join(flows, "\n")+"\n", "add-flows", br, "-")
}

// TestPipelineACLThenNormal: table 0 classifies, table 1 is an ACL that
// drops one TCP port, table 2 is NORMAL. Ping and TCP on other ports
// cross; the blocked port does not; dump-tables counts each table's
// lookups, dump-flows prints each rule's table.
func TestPipelineACLThenNormal(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, br, client, server := r.d, r.br, r.hosts[0], r.hosts[1]

	blocked := listenTCP(t, server.ns, server.addr)
	blockedPort := blocked.Addr().(*net.TCPAddr).Port
	setPipeline(t, d, br,
		"table=0,priority=0,actions=goto_table:1",
		fmt.Sprintf("table=1,priority=100,tcp,tp_dst=%d,actions=drop", blockedPort),
		"table=1,priority=0,actions=goto_table:2",
		"table=2,priority=0,actions=NORMAL")

	requirePing(t, client.ns, server.addr, 56)
	transferTCP(t, client.ns, server.ns, server.addr, server.addr, 1<<20)
	if connects(client.ns, blocked.Addr().String()) {
		t.Fatalf("connected to port %d past table 1's drop rule", blockedPort)
	}

	dump := d.x(t, "dump-flows", br)
	for _, want := range []string{"table=0, ", "table=1, ", "table=2, ", "actions=goto_table:1", "actions=goto_table:2"} {
		if !strings.Contains(dump, want) {
			t.Errorf("dump-flows lacks %q:\n%s", want, dump)
		}
	}
	dropped := flowPackets(t, d, br, fmt.Sprintf("tcp,tp_dst=%d ", blockedPort))
	if dropped < 1 {
		t.Errorf("the ACL's drop rule counted %d packets, want the dropped SYNs", dropped)
	}
	// The client's port counts them as the pipeline's rule drops.
	var ports jsonDumpPorts
	d.xJSON(t, &ports, "dump-ports", br, client.name)
	if len(ports.Ports) != 1 || ports.Ports[0].PipelineDrops["rule"] < uint64(dropped) {
		t.Errorf("dump-ports %s: %+v; want at least the %d SYNs the ACL dropped as rule drops", client.name, ports.Ports, dropped)
	}
	if text := d.x(t, "dump-ports", br, client.name); !strings.Contains(text, "pipeline drops rule=") {
		t.Errorf("dump-ports lacks the pipeline drops line:\n%s", text)
	}
	var tables jsonTables
	d.xJSON(t, &tables, "dump-tables", br)
	if len(tables.Tables) != 255 {
		t.Fatalf("dump-tables gave %d tables, want 255 (0-254)", len(tables.Tables))
	}
	t0, t1, t2, t3 := tables.Tables[0], tables.Tables[1], tables.Tables[2], tables.Tables[3]
	switch {
	case t0.Active != 1 || t1.Active != 2 || t2.Active != 1 || t3.Active != 0:
		t.Errorf("active rules %d %d %d %d, want 1 2 1 0", t0.Active, t1.Active, t2.Active, t3.Active)
	case t1.Lookups < 700 || t1.Matched != t1.Lookups || t0.Lookups < t1.Lookups:
		// A MiB over TCP is ~700 segments one way and the acks the other;
		// table 0 also saw the frames from before the pipeline was set.
		t.Errorf("table 0 looked up %d, table 1 %d (matched %d): want every frame in both, matched in table 1", t0.Lookups, t1.Lookups, t1.Matched)
	case t2.Lookups >= t1.Lookups || t1.Lookups-t2.Lookups < 1:
		t.Errorf("table 1 looked up %d, table 2 %d: the blocked SYNs should stop in table 1", t1.Lookups, t2.Lookups)
	case t3.Lookups != 0:
		t.Errorf("table 3 looked up %d frames, want none", t3.Lookups)
	}
	text := d.x(t, "dump-tables", br)
	for _, want := range []string{"  table 0:\n    active=1, lookup=", "  table 2:\n", "  tables 4...254: ditto\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("dump-tables lacks %q:\n%s", want, text)
		}
	}
}

// TestPipelineResubmitWithRegisters: table 0 writes the input port's peer
// into reg0 and resubmits to table 1, which outputs by reg0 alone: the
// register carries the decision from one table to the next.
func TestPipelineResubmitWithRegisters(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
	nums := ofports(t, d, br)
	pa, pb := nums[a.name], nums[b.name]
	setPipeline(t, d, br,
		fmt.Sprintf("in_port=%d,actions=load:%d->NXM_NX_REG0[0..15],resubmit(,1)", pa, pb),
		fmt.Sprintf("in_port=%d,actions=set_field:%d->reg0,resubmit(,1)", pb, pa),
		fmt.Sprintf("table=1,reg0=%d,actions=output:%d", pa, pa),
		fmt.Sprintf("table=1,reg0=%d,actions=output:%d", pb, pb))
	run(t, "ip", "netns", "exec", a.ns, "ip", "neigh", "flush", "all")
	requirePing(t, a.ns, b.addr, 56)
	transferTCP(t, b.ns, a.ns, a.addr, a.addr, 1<<20)
	if got := flowPackets(t, d, br, fmt.Sprintf("reg0=%#x ", pb)); got < 3 {
		t.Errorf("table 1's reg0=%d rule counted %d packets, want at least the echo requests", pb, got)
	}
	// A register no rule in table 1 matches: nothing crosses.
	d.x(t, "mod-flows", br, fmt.Sprintf("in_port=%d,actions=load:0x99->reg0[],resubmit(,1)", pa))
	if _, received, out := ping(t, a.ns, b.addr, 56, 3); received != 0 {
		t.Errorf("pings crossed with reg0 matching no rule of table 1:\n%s", out)
	}
	var ports jsonDumpPorts
	d.xJSON(t, &ports, "dump-ports", br, a.name)
	if len(ports.Ports) != 1 || ports.Ports[0].PipelineDrops["table_miss"] < 3 {
		t.Errorf("dump-ports %s: %+v; want the 3 echo requests that missed in table 1 as table_miss drops", a.name, ports.Ports)
	}
}

// TestPipelineLoopIsCutAndCounted: two tables that resubmit to each other
// catch every IP frame; it is cut at the depth limit, counted as a loop
// drop and logged once, and the daemon goes on forwarding what the loop
// does not catch and, once the loop is gone, everything.
func TestPipelineLoopIsCutAndCounted(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
	setPipeline(t, d, br,
		"table=0,priority=10,ip,actions=resubmit(,1)",
		"table=0,priority=0,actions=NORMAL",
		"table=1,actions=resubmit(,0)")
	if _, received, out := ping(t, a.ns, b.addr, 56, 5); received != 0 {
		t.Errorf("pings crossed a resubmit loop:\n%s", out)
	}
	var pmd jsonPMDStats
	d.xJSON(t, &pmd, "pmd-stats-show", br)
	if loops := pmd.Bridges[0].PipelineDrops["loop"]; loops < 5 {
		t.Errorf("pmd-stats-show counts %d loop drops, want at least the 5 echo requests: %+v", loops, pmd.Bridges[0].PipelineDrops)
	}
	if out := d.x(t, "pmd-stats-show", br); !strings.Contains(out, "loop=") {
		t.Errorf("pmd-stats-show does not show loop drops:\n%s", out)
	}
	if n := strings.Count(d.log(), "the rules loop"); n != 1 {
		t.Errorf("the daemon logged the loop %d times, want once:\n%s", n, d.log())
	}
	// ARP is not caught: it still crosses, so neighbours resolve.
	if out := d.x(t, "trace", br, fmt.Sprintf("in_port=%d,arp", ofports(t, d, br)[a.name])); !strings.Contains(out, "NORMAL") {
		t.Errorf("trace of ARP does not reach NORMAL:\n%s", out)
	}
	out := d.x(t, "trace", br, fmt.Sprintf("in_port=%d,ip", ofports(t, d, br)[a.name]))
	if !strings.Contains(out, "deeper than 64 tables") || !strings.Contains(out, "Datapath actions: drop") {
		t.Errorf("trace of the loop does not say it is cut:\n%s", out)
	}
	d.x(t, "del-flows", br, "table=1")
	d.x(t, "mod-flows", br, "table=0,ip,actions=NORMAL")
	requirePing(t, a.ns, b.addr, 56)
}

// TestPipelineTraceNamesEveryTable: trace shows each table the packet
// visits, the rule it meets there and the actions, nested by resubmit,
// and the JSON names each step's table.
func TestPipelineTraceNamesEveryTable(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
	nums := ofports(t, d, br)
	setPipeline(t, d, br,
		"table=0,priority=5,ip,actions=load:7->reg1[],resubmit(,3),goto_table:1",
		"table=3,reg1=7,actions=load:1->reg2[]",
		"table=1,priority=9,ip,actions=goto_table:2",
		"table=2,actions=NORMAL")
	requirePing(t, a.ns, b.addr, 56)
	packet := fmt.Sprintf("in_port=%d,ip,dl_dst=%s,nw_dst=%s", nums[a.name], nsMAC(t, b.ns, "eth0"), b.addr)
	out := d.x(t, "trace", br, packet)
	for _, want := range []string{
		" 0. ip, priority 5, cookie 0x0\n    load:0x7->reg1[]\n    resubmit(,3)\n",
		"     3. reg1=0x7, priority 32768, cookie 0x0\n",
		"    goto_table:1\n 1. ip, priority 9, cookie 0x0\n    goto_table:2\n 2. (any), priority 32768, cookie 0x0\n    NORMAL\n",
		fmt.Sprintf("Datapath actions: %d\n", nums[b.name]),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("trace lacks %q:\n%s", want, out)
		}
	}
	var tr jsonTrace
	d.xJSON(t, &tr, "trace", br, packet)
	var visited []int
	for _, s := range tr.Steps {
		if s.Lookup {
			visited = append(visited, s.Table)
		}
	}
	if fmt.Sprint(visited) != "[0 3 1 2]" {
		t.Errorf("trace JSON visits tables %v, want [0 3 1 2]: %+v", visited, tr.Steps)
	}
}

// TestPipelineLocalPort: LOCAL is the bridge's own port, the internal
// port named like the bridge (ofport 65534, as in OVS). Before it exists a
// rule naming LOCAL is refused; after, rules between LOCAL and a port
// carry ping.
func TestPipelineLocalPort(t *testing.T) {
	testenv.RequireRoot(t)
	d := startDaemon(t)
	n := newTestNet()
	br := n.name("br")
	d.x(t, "add-br", br)
	p := addNSPort(t, d, n, br, 1, false)
	if out, code := d.xErr(t, "add-flow", br, "in_port=1,actions=LOCAL"); code == 0 || !strings.Contains(out, "reserved port LOCAL") {
		t.Errorf("LOCAL before the bridge has its own port: exit %d, %q", code, out)
	}
	ns := n.namespace(t, "l")
	deleteLinkAtCleanup(t, internalDevice(br))
	d.x(t, "add-port", br, br, "--type", "internal", "--netns", ns, "--address", n.ipv4(9)+"/24")
	nums := ofports(t, d, br)
	if nums[br] != 65534 {
		t.Fatalf("the port named like the bridge has ofport %d, want LOCAL (65534)", nums[br])
	}
	setPipeline(t, d, br,
		fmt.Sprintf("in_port=LOCAL,actions=output:%d", nums[p.name]),
		fmt.Sprintf("in_port=%d,actions=LOCAL", nums[p.name]))
	requirePing(t, ns, p.addr, 56)
	dump := d.x(t, "dump-flows", br)
	if !strings.Contains(dump, "in_port=LOCAL actions=output:") || !strings.Contains(dump, "actions=output:LOCAL") {
		t.Errorf("dump-flows does not name LOCAL:\n%s", dump)
	}
	if got := flowPackets(t, d, br, "in_port=LOCAL "); got < 3 {
		t.Errorf("the in_port=LOCAL rule counted %d packets, want the echo requests", got)
	}
}
