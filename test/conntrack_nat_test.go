package test

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// NAT through connection tracking, as OVS's system-traffic.at tests it
// ("conntrack - ... SNAT", "... DNAT", "DNAT load balancing").

// ovsARPResponder is the ARP responder of system-traffic.at's NAT tests,
// for the addresses only NAT uses: table 8 loads the MAC address of the
// address asked for (reg2) into xreg0, where the test's own table 8 rule
// knows it, and table 10 turns the request into the answer and sends it
// back where it came from; requests for other addresses go to NORMAL.
// OVS's sends the answer with output:NXM_NX_REG3[0..15] (the input port,
// moved there, and in_port zeroed so that output may send back to it);
// xswitch has no output to a field's port, so this one says IN_PORT.
const ovsARPResponder = `priority=100 arp arp_op=1 action=move:OXM_OF_ARP_TPA[]->NXM_NX_REG2[],resubmit(,8),goto_table:10
priority=10 arp action=normal
priority=0,action=drop
table=8,priority=0,action=load:0->OXM_OF_PKT_REG0[]
table=10 priority=100 arp xreg0=0 action=normal
table=10 priority=10,arp,arp_op=1,action=load:2->OXM_OF_ARP_OP[],move:OXM_OF_ARP_SHA[]->OXM_OF_ARP_THA[],move:OXM_OF_PKT_REG0[0..47]->OXM_OF_ARP_SHA[],move:OXM_OF_ARP_SPA[]->OXM_OF_ARP_TPA[],move:NXM_NX_REG2[]->OXM_OF_ARP_SPA[],move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],move:OXM_OF_PKT_REG0[0..47]->NXM_OF_ETH_SRC[],IN_PORT
table=10 priority=0 action=drop
`

// setMAC gives eth0 in namespace ns the MAC address mac, as
// system-traffic.at does for the hosts its ARP responder answers for.
func setMAC(t testing.TB, ns, mac string) {
	t.Helper()
	mustRun(t, "ip", "-n", ns, "link", "set", "dev", "eth0", "address", mac)
}

// TestConntrackSNATPortRange is OVS's "conntrack - SNAT with port range":
// TCP from port 1 leaves with a source address of 10.1.1.240-254 and a
// port of 34567-34568, which the server sees, and its replies find their
// way back through the reverse translation; dump-conntrack shows the
// translated reply tuples.
func TestConntrackSNATPortRange(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		ns0, ns1 := r.hosts[0], r.hosts[1]
		setMAC(t, ns0.ns, "80:88:88:88:88:88")
		r.ovsFlows(t, `in_port=1,tcp,action=ct(commit,zone=1,nat(src=10.1.1.240-10.1.1.254:34567-34568,random)),2
in_port=2,ct_state=-trk,tcp,tp_dst=34567,action=ct(table=0,zone=1,nat)
in_port=2,ct_state=-trk,tcp,tp_dst=34568,action=ct(table=0,zone=1,nat)
in_port=2,ct_state=+trk,ct_zone=1,tcp,action=1
table=8,reg2=0x0a0101f0/0xfffffff0,action=load:0x808888888888->OXM_OF_PKT_REG0[]
`+ovsARPResponder)
		server := serveTCP(t, ns1.ns, ns1.addr, 80, "ns1")
		const connections = 4
		for range connections {
			wantAnswer(t, ns0.ns, ns1.addr, 80, "ns1")
		}
		first, last := netip.MustParseAddr(r.n.ipv4(240)), netip.MustParseAddr(r.n.ipv4(254))
		seen := map[netip.AddrPort]bool{}
		for _, c := range server.clients() {
			if c.Addr().Less(first) || last.Less(c.Addr()) || c.Port() < 34567 || c.Port() > 34568 {
				t.Errorf("the server saw a client at %v, outside 10.1.1.240-254 ports 34567-34568", c)
			}
			if seen[c] {
				t.Errorf("two connections were translated to %v", c)
			}
			seen[c] = true
		}
		if len(seen) != connections {
			t.Errorf("the server saw %d connections, want %d: %v", len(seen), connections, server.clients())
		}
		// OVS's test writes the translated addresses as 10.1.1.2XX.
		translated := regexp.MustCompile(`dst=` + regexp.QuoteMeta(r.n.fromOVS("10.1.1.2")) + `[45][0-9]`)
		dump := translated.ReplaceAllString(r.d.x(t, "dump-conntrack"), "dst="+r.n.fromOVS("10.1.1.2XX"))
		if got, want := formatCT(dump, ns1.addr), r.fromOVS([]string{"tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.2,dst=10.1.1.2XX,sport=<cleared>,dport=<cleared>),zone=1,protoinfo=(state=<cleared>)"}); !slices.Equal(got, want) {
			t.Errorf("dump-conntrack | FORMAT_CT(10.1.1.2) | sed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// TestConntrackSNATExhaustion is the intent of OVS's "conntrack - SNAT
// with port range with exhaustion" with more clients than ports: SNAT to
// one address and two ports holds two connections to one server; a
// third client's SYNs go untranslated, which the rule of frames that
// were not translated (-snat) drops and counts, as the daemon counts the
// commits it refused, and the two connections go on working.
func TestConntrackSNATExhaustion(t *testing.T) {
	metrics := freeTCPAddr(t)
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		ns0, ns1 := r.hosts[0], r.hosts[1]
		setMAC(t, ns0.ns, "80:88:88:88:88:88")
		r.ovsFlows(t, `in_port=1,tcp,action=ct(commit,zone=1,nat(src=10.1.1.240:34567-34568),table=1)
in_port=2,ct_state=-trk,tcp,action=ct(table=1,zone=1,nat)
table=1,in_port=1,ct_state=+trk+snat,tcp,action=2
table=1,in_port=1,ct_state=+trk-snat,tcp,action=drop
table=1,in_port=2,ct_state=+trk+est,ct_zone=1,tcp,action=1
table=8,reg2=0x0a0101f0,action=load:0x808888888888->OXM_OF_PKT_REG0[]
`+ovsARPResponder)
		server := serveTCP(t, ns1.ns, ns1.addr, 80, "ns1")
		addr := net.JoinHostPort(ns1.addr, "80")
		var held []net.Conn
		for range 2 {
			c, err := dialTCP(ns0.ns, 0, addr)
			if err != nil {
				t.Fatalf("a connection while the NAT range has room: %v", err)
			}
			held = append(held, c)
		}
		untranslated := "ct_state=+trk-snat,in_port=1 actions=drop"
		if got := flowPackets(t, r.d, r.br, untranslated); got != 0 {
			t.Errorf("the rule of untranslated frames counted %d while the range had room", got)
		}
		wantNoAnswer(t, ns0.ns, ns1.addr, 80)
		dropped := flowPackets(t, r.d, r.br, untranslated)
		if dropped < 2 {
			t.Errorf("the rule of untranslated frames counted %d, want the third client's SYNs (2 or 3)", dropped)
		}
		refused := scrapeMetrics(t, metrics).value(t, "xswitch_conntrack_refused_total", map[string]string{"reason": "nat_exhausted"})
		if int(refused) != dropped {
			t.Errorf("xswitch_conntrack_refused_total{reason=\"nat_exhausted\"} is %v, want the %d SYNs that went untranslated", refused, dropped)
		}
		for i, c := range held {
			if got, err := ask(c); err != nil || got != "ns1" {
				t.Errorf("connection %d, open while the range was exhausted: answer %q, %v", i+1, got, err)
			}
		}
		ports := map[uint16]bool{}
		for _, c := range server.clients() {
			if c.Addr().String() != r.n.ipv4(240) {
				t.Errorf("the server saw a client at %v, not at 10.1.1.240", c)
			}
			ports[c.Port()] = true
		}
		if len(server.clients()) != 2 || !ports[34567] || !ports[34568] {
			t.Errorf("the server saw clients %v, want 10.1.1.240 ports 34567 and 34568", server.clients())
		}
		r.wantConntrack(t, "10.1.1.2", "tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.2,dst=10.1.1.240,sport=<cleared>,dport=<cleared>),zone=1,protoinfo=(state=<cleared>)")
	}, "--metrics-addr", metrics)
}

// TestConntrackDNAT is OVS's "conntrack - simple DNAT": TCP to the
// virtual address 10.1.1.64 reaches the server at 10.1.1.2, which sees
// the client's own address, and its replies go back from 10.1.1.64;
// the server's own address works as well; dump-conntrack shows both
// connections, the first with the server in its reply tuple.
func TestConntrackDNAT(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		ns0, ns1 := r.hosts[0], r.hosts[1]
		setMAC(t, ns1.ns, "80:88:88:88:88:88")
		r.ovsFlows(t, `priority=100 in_port=1,ip,nw_dst=10.1.1.64,action=ct(zone=1,nat(dst=10.1.1.2),commit),2
priority=10 in_port=1,ip,action=ct(commit,zone=1),2
priority=100 in_port=2,ct_state=-trk,ip,action=ct(table=0,nat,zone=1)
priority=100 in_port=2,ct_state=+trk+est,ct_zone=1,ip,action=1
table=8,reg2=0x0a010140,action=load:0x808888888888->OXM_OF_PKT_REG0[]
`+ovsARPResponder)
		server := serveTCP(t, ns1.ns, "", 80, "ns1")
		wantAnswer(t, ns0.ns, r.n.ipv4(64), 80, "ns1")
		r.wantConntrack(t, "10.1.1.64", "tcp,orig=(src=10.1.1.1,dst=10.1.1.64,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.2,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),zone=1,protoinfo=(state=<cleared>)")
		wantAnswer(t, ns0.ns, ns1.addr, 80, "ns1")
		r.wantConntrack(t, "10.1.1.2", "tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.2,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),zone=1,protoinfo=(state=<cleared>)")
		for _, c := range server.clients() {
			if c.Addr().String() != ns0.addr {
				t.Errorf("the server saw a client at %v, want %s: DNAT changed the source", c, ns0.addr)
			}
		}
		if n := len(server.clients()); n != 2 {
			t.Errorf("the server saw %d connections, want 2", n)
		}
		if got := flowPackets(t, r.d, r.br, "nw_dst="+r.n.ipv4(64)); got < 3 {
			t.Errorf("the rule of the virtual address counted %d packets, want the connection's (at least 3)", got)
		}
	})
}

// TestConntrackDNATLoadBalancing is OVS's "conntrack - DNAT load
// balancing": a select group whose buckets each commit a connection to
// the virtual address with DNAT to another server spreads 50
// connections over the three servers, each connection's packets staying
// with its server; dump-conntrack shows connections to each.
func TestConntrackDNATLoadBalancing(t *testing.T) {
	inBothModes(t, 4, func(t *testing.T, r *rig, _ bool) {
		for i, h := range r.hosts {
			setMAC(t, h.ns, fmt.Sprintf("80:88:88:88:88:%d%d", i+1, i+1))
		}
		r.d.x(t, "add-group", r.br, r.n.fromOVS("group_id=234,type=select,bucket=weight=100,ct(nat(dst=10.1.1.2),commit,table=4),bucket=weight=100,ct(nat(dst=10.1.1.3),commit,table=4),bucket=weight=100,ct(nat(dst=10.1.1.4),commit,table=4)"))
		r.ovsFlows(t, `table=0 priority=100 ip nw_dst=10.1.1.64 action=group:234
table=0 priority=90 ip action=ct(table=4,nat)
table=4,ip,nw_dst=10.1.1.1 action=mod_dl_dst:80:88:88:88:88:11,output:1
table=4,ip,nw_dst=10.1.1.2 action=mod_dl_dst:80:88:88:88:88:22,output:2
table=4,ip,nw_dst=10.1.1.3 action=mod_dl_dst:80:88:88:88:88:33,output:3
table=4,ip,nw_dst=10.1.1.4 action=mod_dl_dst:80:88:88:88:88:44,output:4
table=4 priority=0 action=drop
table=8,reg2=0x0a010140,action=load:0x808888888888->OXM_OF_PKT_REG0[]
`+ovsARPResponder)
		for i, h := range r.hosts[1:] {
			serveTCP(t, h.ns, "", 80, fmt.Sprintf("ns%d", i+2))
		}
		const connections = 50
		answers := map[string]int{}
		vip := net.JoinHostPort(r.n.ipv4(64), "80")
		for range connections {
			got, err := askTCP(r.hosts[0].ns, 0, vip)
			if err != nil {
				t.Errorf("TCP to the virtual address: %v", err)
				continue
			}
			answers[got]++
		}
		t.Logf("answers of %d connections: %v", connections, answers)
		for _, server := range []string{"ns2", "ns3", "ns4"} {
			if answers[server] == 0 {
				t.Errorf("no connection reached server %s: %v", server, answers)
			}
		}
		if total := answers["ns2"] + answers["ns3"] + answers["ns4"]; total != connections {
			t.Errorf("%d of %d connections were answered by a server: %v", total, connections, answers)
		}
		r.wantConntrack(t, "10.1.1.64",
			"tcp,orig=(src=10.1.1.1,dst=10.1.1.64,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.2,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),protoinfo=(state=<cleared>)",
			"tcp,orig=(src=10.1.1.1,dst=10.1.1.64,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.3,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),protoinfo=(state=<cleared>)",
			"tcp,orig=(src=10.1.1.1,dst=10.1.1.64,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.4,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),protoinfo=(state=<cleared>)")
	})
}
