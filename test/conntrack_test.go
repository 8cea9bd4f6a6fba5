package test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xswitch/xswitch/internal/netns"
)

// Connection tracking between namespaces, as Open vSwitch's
// tests/system-traffic.at tests it ("conntrack - ..."): the same rules,
// typed as an OVS user types them, the same traffic (ping, TCP where OVS
// fetches a web page, UDP), each test with the fast path on and off.
// The rules' addresses are OVS's (10.1.1.N, fc00::N), which ovsFlows
// moves into the test's own subnet; a rig's host i is OVS's at_ns(i-1)
// behind port i.

// ovsFlows adds rules written with system-traffic.at's addresses, after
// moving them into the rig's subnet: 10.1.1.N becomes 10.x.y.N (and
// 0x0a0101NN, its hex, 0x0axxyyNN), fc00::N becomes fd00:x:y::N. It
// first checks that host i is behind OpenFlow port i, as the rules say.
func (r *rig) ovsFlows(t *testing.T, flows string) {
	t.Helper()
	numbers := ofports(t, r.d, r.br)
	for i, h := range r.hosts {
		if numbers[h.name] != i+1 {
			t.Fatalf("host %d is behind port %d, want %d: the rules would not mean what they say", i+1, numbers[h.name], i+1)
		}
	}
	r.addFlows(t, r.n.fromOVS(flows))
}

// fromOVS moves OVS's test addresses in s into n's subnet.
func (n *testNet) fromOVS(s string) string {
	v4 := strings.TrimSuffix(n.ipv4(0), "0")
	return strings.NewReplacer(
		"10.1.1.", v4,
		"0x0a0101", fmt.Sprintf("0x0a%02x%02x", n.x, n.y),
		"fc00::", n.ipv6(0),
	).Replace(s)
}

// ctCleared is what OVS's FORMAT_CT clears in dump-conntrack's lines:
// ports, ICMP ids and TCP states, which change from run to run.
var ctCleared = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`port=[0-9]*`), "port=<cleared>"},
	{regexp.MustCompile(`id=[0-9]*`), "id=<cleared>"},
	{regexp.MustCompile(`state=[0-9_A-Z]*`), "state=<cleared>"},
}

// formatCT is OVS's FORMAT_CT(addr) of a dump-conntrack: the lines with
// "dst=addr" (a prefix, as grep finds it), cleared, sorted, without
// repeats.
func formatCT(dump, addr string) []string {
	var lines []string
	for _, line := range strings.Split(dump, "\n") {
		if !strings.Contains(line, "dst="+addr) {
			continue
		}
		for _, c := range ctCleared {
			line = c.re.ReplaceAllString(line, c.with)
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

// wantConntrack wants FORMAT_CT(addr) of dump-conntrack to be want;
// addr and want are written with OVS's addresses.
func (r *rig) wantConntrack(t testing.TB, addr string, want ...string) {
	t.Helper()
	r.waitConntrack(t, nil, addr, want...)
}

// waitConntrack waits, for at most 5 s, until FORMAT_CT(addr) of the
// lines of dump-conntrack that match keep (all when nil) is want, as
// OVS's OVS_WAIT_UNTIL_EQUAL does.
func (r *rig) waitConntrack(t testing.TB, keep *regexp.Regexp, addr string, want ...string) {
	t.Helper()
	wanted := r.fromOVS(want)
	deadline := time.Now().Add(5 * time.Second)
	for {
		dump := r.d.x(t, "dump-conntrack")
		kept := dump
		if keep != nil {
			kept = strings.Join(slices.DeleteFunc(strings.Split(dump, "\n"), func(l string) bool { return !keep.MatchString(l) }), "\n")
		}
		got := formatCT(kept, r.n.fromOVS(addr))
		if slices.Equal(got, wanted) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("dump-conntrack | FORMAT_CT(%s):\n%s\nwant:\n%s\nwhole dump:\n%s", addr,
				strings.Join(got, "\n"), strings.Join(wanted, "\n"), dump)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fromOVS is testNet.fromOVS of each of lines.
func (r *rig) fromOVS(lines []string) []string {
	moved := make([]string, len(lines))
	for i, line := range lines {
		moved[i] = r.n.fromOVS(line)
	}
	return moved
}

// tcpService is a TCP server in a namespace, OVS's web server: it
// answers each line a client sends with its name, until the client
// closes, and notes who connected.
type tcpService struct {
	name string
	l    net.Listener
	mu   sync.Mutex
	from []netip.AddrPort
}

// serveTCP starts a tcpService on addr:port in namespace ns until the test
// ends.
func serveTCP(t *testing.T, ns, addr string, port int, name string) *tcpService {
	t.Helper()
	s := &tcpService{name: name}
	if err := netns.Do(ns, func() (err error) {
		s.l, err = net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", ns, err)
	}
	t.Cleanup(func() { s.l.Close() })
	go func() {
		for {
			c, err := s.l.Accept()
			if err != nil {
				return
			}
			from := c.RemoteAddr().(*net.TCPAddr).AddrPort()
			s.mu.Lock()
			s.from = append(s.from, netip.AddrPortFrom(from.Addr().Unmap(), from.Port()))
			s.mu.Unlock()
			go func() {
				defer c.Close()
				lines := bufio.NewScanner(c)
				for c.SetDeadline(time.Now().Add(time.Minute)) == nil && lines.Scan() {
					if _, err := fmt.Fprintln(c, s.name); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

// clients are the addresses the service accepted connections from.
func (s *tcpService) clients() []netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]netip.AddrPort{}, s.from...)
}

// tcpTimeout is how long askTCP waits for each step: as OVS's wget (three
// tries a second apart), SYN retransmissions included.
const askTimeout = 3 * time.Second

// askTCP connects from namespace ns (from local port lport, or any when
// 0) to addr (host:port), sends a line and returns the line it gets back.
func askTCP(ns string, lport int, addr string) (string, error) {
	c, err := dialTCP(ns, lport, addr)
	if err != nil {
		return "", err
	}
	return ask(c)
}

// dialTCP opens a TCP connection from namespace ns (from local port
// lport, or any when 0) to addr (host:port).
func dialTCP(ns string, lport int, addr string) (net.Conn, error) {
	var c net.Conn
	err := netns.Do(ns, func() (err error) {
		d := net.Dialer{Timeout: askTimeout}
		if lport != 0 {
			d.LocalAddr = &net.TCPAddr{Port: lport}
		}
		c, err = d.Dial("tcp", addr)
		return err
	})
	return c, err
}

// ask sends a line on c, returns the line it gets back, and closes c.
func ask(c net.Conn) (string, error) {
	defer c.Close()
	return exchange(c)
}

// exchange sends a line on c and returns the line it gets back, leaving
// c open.
func exchange(c net.Conn) (string, error) {
	c.SetDeadline(time.Now().Add(askTimeout))
	if _, err := fmt.Fprintln(c, "hello"); err != nil {
		return "", err
	}
	// One line a request: nothing is read past the answer.
	answer, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(answer), err
}

// wantAnswer asks the service at addr:port from namespace ns and wants
// the answer want.
func wantAnswer(t testing.TB, ns, addr string, port int, want string) {
	t.Helper()
	got, err := askTCP(ns, 0, net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil || got != want {
		t.Errorf("TCP from %s to %s port %d: answer %q, %v; want %q", ns, addr, port, got, err, want)
	}
}

// wantNoAnswer wants no TCP connection from namespace ns to addr:port to
// open.
func wantNoAnswer(t testing.TB, ns, addr string, port int) {
	t.Helper()
	got, err := askTCP(ns, 0, net.JoinHostPort(addr, strconv.Itoa(port)))
	if err == nil {
		t.Errorf("TCP from %s to %s port %d: answered %q, want no connection", ns, addr, port, got)
	}
}

// TestConntrackIPv4Ping is OVS's "conntrack - IPv4 ping": echo requests
// from port 1 are committed, and only their replies come back from port
// 2, established; port 2's own requests stay new and are dropped.
// dump-conntrack shows the one connection of the pings, and
// flush-conntrack of its addresses deletes it.
func TestConntrackIPv4Ping(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=100,in_port=1,icmp,action=ct(commit),2
priority=100,in_port=2,icmp,ct_state=-trk,action=ct(table=0)
priority=100,in_port=2,icmp,ct_state=+trk+est,action=1
`)
		ns0, ns1 := r.hosts[0], r.hosts[1]
		if sent, received, out := ping(t, ns0.ns, ns1.addr, 56, 3); sent != 3 || received != 3 {
			t.Errorf("ping from port 1: %d of %d replies, want all 3:\n%s", received, sent, out)
		}
		r.wantConntrack(t, "10.1.1.2", "icmp,orig=(src=10.1.1.1,dst=10.1.1.2,id=<cleared>,type=8,code=0),reply=(src=10.1.1.2,dst=10.1.1.1,id=<cleared>,type=0,code=0)")
		r.d.x(t, "flush-conntrack", r.n.fromOVS("ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2"))
		r.wantConntrack(t, "10.1.1.2")
		if _, received, out := ping(t, ns1.ns, ns0.addr, 56, 3); received != 0 {
			t.Errorf("ping from port 2 got %d replies through a table that lets in only established traffic:\n%s", received, out)
		}
		if got := flowPackets(t, r.d, r.br, "ct_state=+est+trk"); got != 3 {
			t.Errorf("the +est rule counted %d packets, want the 3 echo replies", got)
		}
		if got := flowPackets(t, r.d, r.br, "priority=1 "); got < 3 {
			t.Errorf("the drop rule counted %d packets, want at least port 2's 3 echo requests", got)
		}
	})
}

// TestConntrackIPv6Ping is OVS's "conntrack - IPv6 ping": echo requests
// and replies go through the firewall in table 1, neighbour discovery
// and the rest through NORMAL; dump-conntrack and flush-conntrack as for
// IPv4.
func TestConntrackIPv6Ping(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		for i, h := range r.hosts {
			mustRun(t, "ip", "-n", h.ns, "addr", "add", r.n.ipv6(i+1)+"/64", "dev", "eth0", "nodad")
		}
		r.ovsFlows(t, `table=0,priority=10,icmp6,icmp_type=128,action=goto_table:1
table=0,priority=10,icmp6,icmp_type=129,action=goto_table:1
table=0,priority=1,action=normal
table=1,priority=100,in_port=1,icmp6,action=ct(commit),2
table=1,priority=100,in_port=2,icmp6,ct_state=-trk,action=ct(table=0)
table=1,priority=100,in_port=2,icmp6,ct_state=+trk+est,action=1
table=1,priority=1,action=drop
`)
		ns0, ns1 := r.hosts[0].ns, r.hosts[1].ns
		addr0, addr1 := r.n.ipv6(1), r.n.ipv6(2)
		waitPing(t, ns0, addr1, 5*time.Second)
		// The state that made, OVS's test is not interested in.
		r.d.x(t, "flush-conntrack")
		if _, received, out := ping(t, ns1, addr0, 56, 3); received != 0 {
			t.Errorf("ping -6 from port 2 got %d replies through a table that lets in only established traffic:\n%s", received, out)
		}
		if sent, received, out := ping(t, ns0, addr1, 56, 3); sent != 3 || received != 3 {
			t.Errorf("ping -6 from port 1: %d of %d replies, want all 3:\n%s", received, sent, out)
		}
		r.wantConntrack(t, "fc00::2", "icmpv6,orig=(src=fc00::1,dst=fc00::2,id=<cleared>,type=128,code=0),reply=(src=fc00::2,dst=fc00::1,id=<cleared>,type=129,code=0)")
		r.d.x(t, "flush-conntrack", r.n.fromOVS("ct_ipv6_src=fc00::1,ct_ipv6_dst=fc00::2"))
		r.wantConntrack(t, "fc00::2")
		if got := flowPackets(t, r.d, r.br, "ct_state=+est+trk"); got < 3 {
			t.Errorf("the +est rule counted %d packets, want at least the last 3 echo replies", got)
		}
		if got := flowPackets(t, r.d, r.br, "priority=1 actions=drop"); got < 3 {
			t.Errorf("table 1's drop rule counted %d packets, want at least port 2's 3 echo requests", got)
		}
	})
}

// TestConntrackFragmentation is OVS's "conntrack - IPv4 fragmentation"
// and "conntrack - IPv6 fragmentation": pings longer than the MTU, whose
// requests and replies IP sends in two and three fragments, go through a
// firewall that commits port 1's ICMP in zone 9 and lets back only what
// is established; port 2's own pings, fragmented alike, are dropped.
// xswitch does not reassemble as OVS does: each fragment is tracked with
// the verdict its datagram's first fragment got.
func TestConntrackFragmentation(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		for i, h := range r.hosts {
			mustRun(t, "ip", "-n", h.ns, "addr", "add", r.n.ipv6(i+1)+"/64", "dev", "eth0", "nodad")
		}
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=200,icmp6,icmp_type=135,action=normal
priority=200,icmp6,icmp_type=136,action=normal
priority=100,in_port=1,icmp,action=ct(commit,zone=9),2
priority=100,in_port=2,ct_state=-trk,icmp,action=ct(zone=9,table=0)
priority=100,in_port=2,ct_state=+trk+est-new,icmp,action=1
priority=100,in_port=1,icmp6,action=ct(commit,zone=9),2
priority=100,in_port=2,ct_state=-trk,icmp6,action=ct(zone=9,table=0)
priority=100,in_port=2,ct_state=+trk+est-new,icmp6,action=1
`)
		ns0, ns1 := r.hosts[0], r.hosts[1]
		for _, dst := range []string{ns1.addr, r.n.ipv6(2)} {
			for _, size := range []int{1600, 3200} {
				if sent, received, out := ping(t, ns0.ns, dst, size, 3); sent != 3 || received != 3 {
					t.Errorf("ping -s %d %s from port 1: %d of %d replies, want all 3:\n%s", size, dst, received, sent, out)
				}
			}
		}
		zone9 := strings.Count(r.d.x(t, "dump-conntrack", "zone=9"), "zone=9")
		if zone9 != 4 {
			t.Errorf("zone 9 holds %d connections, want the 4 pings' (one each, not one a fragment)", zone9)
		}
		for _, dst := range []string{ns0.addr, r.n.ipv6(1)} {
			if _, received, out := ping(t, ns1.ns, dst, 3200, 2); received != 0 {
				t.Errorf("ping -s 3200 %s from port 2 got %d replies through a table that lets in only established traffic:\n%s", dst, received, out)
			}
		}
		if got := flowPackets(t, r.d, r.br, "priority=1 "); got < 2*2*3 {
			t.Errorf("the drop rule counted %d packets, want at least the 12 fragments of port 2's 4 echo requests", got)
		}
	})
}

// TestConntrackFragmentationWithSNAT: fragmented pings leave port 1
// translated to 10.1.1.240, every fragment's source rewritten, and the
// fragmented replies find their way back through the reverse
// translation; the peer answers only if each datagram reassembles with
// its checksum holding.
func TestConntrackFragmentationWithSNAT(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		ns0, ns1 := r.hosts[0], r.hosts[1]
		setMAC(t, ns0.ns, "80:88:88:88:88:88")
		r.ovsFlows(t, `in_port=1,icmp,action=ct(commit,zone=1,nat(src=10.1.1.240)),2
in_port=2,ct_state=-trk,icmp,action=ct(table=0,zone=1,nat)
in_port=2,ct_state=+trk,ct_zone=1,icmp,action=1
table=8,reg2=0x0a0101f0/0xfffffff0,action=load:0x808888888888->OXM_OF_PKT_REG0[]
`+ovsARPResponder)
		for _, size := range []int{1600, 3200} {
			if sent, received, out := ping(t, ns0.ns, ns1.addr, size, 3); sent != 3 || received != 3 {
				t.Errorf("ping -s %d through SNAT: %d of %d replies, want all 3:\n%s", size, received, sent, out)
			}
		}
		r.wantConntrack(t, "10.1.1.2", "icmp,orig=(src=10.1.1.1,dst=10.1.1.2,id=<cleared>,type=8,code=0),reply=(src=10.1.1.2,dst=10.1.1.240,id=<cleared>,type=0,code=0),zone=1")
	})
}

// TestConntrackStatefulFirewall is OVS's "conntrack - IPv4 HTTP", a
// stateful firewall: connections opened from port 1 go through, both
// ways; a connection opened from port 2 does not, its SYNs new and
// dropped by the rule for them, which counts them, and only them.
func TestConntrackStatefulFirewall(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=10,icmp,action=normal
priority=100,in_port=1,tcp,action=ct(commit),2
priority=100,in_port=2,ct_state=-trk,tcp,action=ct(table=0)
priority=100,in_port=2,ct_state=+trk+est,tcp,action=1
priority=100,in_port=2,ct_state=+trk+new,tcp,action=drop
`)
		ns0, ns1 := r.hosts[0], r.hosts[1]
		serveTCP(t, ns1.ns, ns1.addr, 80, "ns1")
		inside := serveTCP(t, ns0.ns, ns0.addr, 80, "ns0")
		for range 3 {
			wantAnswer(t, ns0.ns, ns1.addr, 80, "ns1")
		}
		r.wantConntrack(t, "10.1.1.2", "tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.2,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),protoinfo=(state=<cleared>)")
		newDrops := "tcp,ct_state=+new+trk,in_port=2 actions=drop"
		if got := flowPackets(t, r.d, r.br, newDrops); got != 0 {
			t.Errorf("the rule for new connections from port 2 counted %d packets of connections port 1 opened", got)
		}
		wantNoAnswer(t, ns1.ns, ns0.addr, 80)
		if got := inside.clients(); len(got) != 0 {
			t.Errorf("the server behind port 1 accepted connections from %v through the firewall", got)
		}
		// Looked up, not committed.
		if dump := r.d.x(t, "dump-conntrack"); strings.Contains(dump, "orig=(src="+ns1.addr+",") {
			t.Errorf("dump-conntrack has a connection from port 2's side:\n%s", dump)
		}
		// A SYN, retransmitted after 1 s and 3 s.
		if got := flowPackets(t, r.d, r.br, newDrops); got < 2 || got > 3 {
			t.Errorf("the rule for new connections from port 2 counted %d packets, want the 2 or 3 SYNs of one connect", got)
		}
		wantAnswer(t, ns0.ns, ns1.addr, 80, "ns1")
	})
}

// TestConntrackPreserveRegisters is OVS's "conntrack - preserve
// registers": a register loaded before ct(table=0) is there when the
// frame comes back, so the rules of ports 3 and 4 recirculate once to
// commit and once more to send, and connections work as between ports 1
// and 2, which do not use registers.
func TestConntrackPreserveRegisters(t *testing.T) {
	inBothModes(t, 4, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=10,icmp,action=normal
priority=100,in_port=1,tcp,ct_state=-trk,action=ct(commit,table=0)
priority=100,in_port=1,tcp,ct_state=+trk,action=2
priority=100,in_port=2,tcp,ct_state=-trk,action=ct(table=0)
priority=100,in_port=2,tcp,ct_state=+trk,action=1
priority=100,in_port=3,tcp,ct_state=-trk,action=load:0->NXM_NX_REG0[],ct(table=0)
priority=100,in_port=3,tcp,ct_state=+trk,reg0=0,action=load:1->NXM_NX_REG0[],ct(commit,table=0)
priority=100,in_port=3,tcp,ct_state=+trk,reg0=1,action=4
priority=100,in_port=4,tcp,ct_state=-trk,action=ct(commit,table=0)
priority=100,in_port=4,tcp,ct_state=+trk,action=3
`)
		serveTCP(t, r.hosts[1].ns, r.hosts[1].addr, 80, "ns1")
		serveTCP(t, r.hosts[3].ns, r.hosts[3].addr, 80, "ns3")
		wantAnswer(t, r.hosts[0].ns, r.hosts[1].addr, 80, "ns1")
		wantAnswer(t, r.hosts[2].ns, r.hosts[3].addr, 80, "ns3")
		if got := flowPackets(t, r.d, r.br, "reg0=0x1,ct_state=+trk,in_port=3 "); got < 3 {
			t.Errorf("the rule of reg0=1 counted %d packets, want every one of port 3's (at least a SYN, an ACK and a FIN)", got)
		}
	})
}

// pairScenario is one of system-traffic.at's scenarios of two pairs of
// hosts: host 1's connection to host 2 works, host 3's to host 4 does not
// when isolated says the rules part them, and dump-conntrack's
// FORMAT_CT of each address in dumps is what dumps says. The rules, the
// addresses and the lines are written with OVS's addresses.
type pairScenario struct {
	name, flows string
	isolated    bool
	dumps       map[string][]string
}

// runPairScenarios runs each scenario in turn in one rig of four hosts,
// with an empty table and connection table each time, in both modes.
func runPairScenarios(t *testing.T, scenarios []pairScenario) {
	inBothModes(t, 4, func(t *testing.T, r *rig, _ bool) {
		serveTCP(t, r.hosts[1].ns, r.hosts[1].addr, 80, "ns1")
		serveTCP(t, r.hosts[3].ns, r.hosts[3].addr, 80, "ns3")
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				r.d.x(t, "del-flows", r.br)
				r.d.x(t, "flush-conntrack")
				r.ovsFlows(t, sc.flows)
				wantAnswer(t, r.hosts[0].ns, r.hosts[1].addr, 80, "ns1")
				if sc.isolated {
					wantNoAnswer(t, r.hosts[2].ns, r.hosts[3].addr, 80)
				}
				for addr, lines := range sc.dumps {
					r.wantConntrack(t, addr, lines...)
				}
			})
		}
	})
}

// TestConntrackZones is OVS's "conntrack - zones" and "conntrack - zones
// from field": ports 1 and 2 commit and look up in one zone, and their
// connections work; ports 3 and 4 commit in another zone than the one
// their rule of replies wants, and theirs do not. The zone is a number
// in the rule, or a register's bits; dump-conntrack shows each
// connection in its zone.
func TestConntrackZones(t *testing.T) {
	runPairScenarios(t, []pairScenario{{"zones", `priority=1,action=drop
priority=10,arp,action=normal
priority=10,icmp,action=normal
priority=100,in_port=1,tcp,action=ct(commit,zone=1),2
priority=100,in_port=2,ct_state=-trk,tcp,action=ct(table=0,zone=1)
priority=100,in_port=2,ct_state=+trk,ct_zone=1,tcp,action=1
priority=100,in_port=3,tcp,action=ct(commit,zone=2),4
priority=100,in_port=4,ct_state=-trk,tcp,action=ct(table=0,zone=2)
priority=100,in_port=4,ct_state=+trk,ct_zone=1,tcp,action=3
`, true, map[string][]string{
		"10.1.1.2": {"tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.2,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),zone=1,protoinfo=(state=<cleared>)"},
		"10.1.1.4": {"tcp,orig=(src=10.1.1.3,dst=10.1.1.4,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.4,dst=10.1.1.3,sport=<cleared>,dport=<cleared>),zone=2,protoinfo=(state=<cleared>)"},
	}}, {"zones from field", `priority=1,action=drop
priority=10,arp,action=normal
priority=10,icmp,action=normal
priority=100,in_port=1,tcp,action=load:0x1001->NXM_NX_REG0[0..15],ct(commit,zone=NXM_NX_REG0[0..15]),2
priority=100,in_port=2,ct_state=-trk,tcp,action=load:0x1001->NXM_NX_REG0[0..15],ct(table=0,zone=NXM_NX_REG0[0..15])
priority=100,in_port=2,ct_state=+trk,ct_zone=0x1001,tcp,action=1
priority=100,in_port=3,tcp,action=load:0x1002->NXM_NX_REG0[0..15],ct(commit,zone=NXM_NX_REG0[0..15]),4
priority=100,in_port=4,ct_state=-trk,tcp,action=load:0x1002->NXM_NX_REG0[0..15],ct(table=0,zone=NXM_NX_REG0[0..15])
priority=100,in_port=4,ct_state=+trk,ct_zone=0x1001,tcp,action=3
`, true, map[string][]string{
		"10.1.1.2": {"tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.2,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),zone=4097,protoinfo=(state=<cleared>)"},
		"10.1.1.4": {"tcp,orig=(src=10.1.1.3,dst=10.1.1.4,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.4,dst=10.1.1.3,sport=<cleared>,dport=<cleared>),zone=4098,protoinfo=(state=<cleared>)"},
	}}})
}

// TestConntrackMultipleZones is OVS's "conntrack - multiple zones": a
// frame committed in two zones, one after the other, has its replies
// found in the second, and a connection in each.
func TestConntrackMultipleZones(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=10,icmp,action=normal
priority=100,in_port=1,tcp,action=ct(commit,zone=1),ct(commit,zone=2),2
priority=100,in_port=2,ct_state=-trk,tcp,action=ct(table=0,zone=2)
priority=100,in_port=2,ct_state=+trk,ct_zone=2,tcp,action=1
`)
		serveTCP(t, r.hosts[1].ns, r.hosts[1].addr, 80, "ns1")
		wantAnswer(t, r.hosts[0].ns, r.hosts[1].addr, 80, "ns1")
		wantAnswer(t, r.hosts[0].ns, r.hosts[1].addr, 80, "ns1")
		r.wantConntrack(t, "10.1.1.2",
			"tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.2,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),zone=1,protoinfo=(state=<cleared>)",
			"tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.2,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),zone=2,protoinfo=(state=<cleared>)")
	})
}

// TestConntrackZonesIsolateIdenticalTuples: two tenants on one bridge
// with the same addresses (hosts 1 and 3 are 10.1.1.1, hosts 2 and 4
// 10.1.1.2), each a zone of its own (the second's from a register), open
// connections of the very same tuple at the same time; each tenant's is
// its own, with its own mark, and both carry their data.
func TestConntrackZonesIsolateIdenticalTuples(t *testing.T) {
	inBothModes(t, 4, func(t *testing.T, r *rig, _ bool) {
		for i, h := range r.hosts[2:] {
			mustRun(t, "ip", "-n", h.ns, "addr", "flush", "dev", "eth0")
			mustRun(t, "ip", "-n", h.ns, "addr", "add", r.n.ipv4(i+1)+"/24", "dev", "eth0")
		}
		r.ovsFlows(t, `priority=1,action=drop
priority=10,in_port=1,arp,action=2
priority=10,in_port=2,arp,action=1
priority=10,in_port=3,arp,action=4
priority=10,in_port=4,arp,action=3
priority=100,in_port=1,tcp,action=ct(commit,zone=1,exec(set_field:1->ct_mark)),2
priority=100,in_port=2,ct_state=-trk,tcp,action=ct(table=0,zone=1)
priority=100,in_port=2,ct_state=+trk+est,ct_zone=1,ct_mark=1,tcp,action=1
priority=100,in_port=3,tcp,action=load:2->NXM_NX_REG0[0..15],ct(commit,zone=NXM_NX_REG0[0..15],exec(set_field:2->ct_mark)),4
priority=100,in_port=4,ct_state=-trk,tcp,action=load:2->NXM_NX_REG0[0..15],ct(table=0,zone=NXM_NX_REG0[0..15])
priority=100,in_port=4,ct_state=+trk+est,ct_zone=2,ct_mark=2,tcp,action=3
`)
		server := net.JoinHostPort(r.n.ipv4(2), "80")
		serveTCP(t, r.hosts[1].ns, r.n.ipv4(2), 80, "tenant 1")
		serveTCP(t, r.hosts[3].ns, r.n.ipv4(2), 80, "tenant 2")
		const lport = 40000
		first, err := dialTCP(r.hosts[0].ns, lport, server)
		if err != nil {
			t.Fatalf("tenant 1's connection from port %d: %v", lport, err)
		}
		second, err := dialTCP(r.hosts[2].ns, lport, server)
		if err != nil {
			first.Close()
			t.Fatalf("tenant 2's connection of the same tuple, while tenant 1's is open: %v", err)
		}
		for want, c := range map[string]net.Conn{"tenant 1": first, "tenant 2": second} {
			if got, err := ask(c); err != nil || got != want {
				t.Errorf("%s's connection answered %q, %v; want %q", want, got, err, want)
			}
		}
		tuple := r.n.fromOVS("tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=40000,dport=80),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=40000),")
		dump := r.d.x(t, "dump-conntrack")
		for _, zone := range []string{"zone=1,mark=1,", "zone=2,mark=2,"} {
			if !strings.Contains(dump, tuple+zone) {
				t.Errorf("dump-conntrack has no %s%s...:\n%s", tuple, zone, dump)
			}
		}
	})
}

// TestConntrackMarkAndLabel is OVS's "conntrack - ct_mark", "ct_mark
// bit-fiddling", "ct_mark from register", "ct_label", "ct_label
// bit-fiddling" and "ct metadata, multiple zones": the mark and label
// exec() writes at commit, whole, under a mask or from a register, are
// what the replies' rules match, and what dump-conntrack shows; ports 3
// and 4 write a mark or label other than the one their rule of replies
// wants, and their connections fail.
func TestConntrackMarkAndLabel(t *testing.T) {
	const (
		orig1 = "tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.2,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),"
		orig3 = "tcp,orig=(src=10.1.1.3,dst=10.1.1.4,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.4,dst=10.1.1.3,sport=<cleared>,dport=<cleared>),"
		state = "protoinfo=(state=<cleared>)"
	)
	runPairScenarios(t, []pairScenario{{"ct_mark", `priority=1,action=drop
priority=10,arp,action=normal
priority=10,icmp,action=normal
priority=100,in_port=1,tcp,action=ct(commit,exec(set_field:1->ct_mark)),2
priority=100,in_port=2,ct_state=-trk,tcp,action=ct(table=0)
priority=100,in_port=2,ct_state=+trk,ct_mark=1,tcp,action=1
priority=100,in_port=3,tcp,action=ct(commit,exec(set_field:2->ct_mark)),4
priority=100,in_port=4,ct_state=-trk,tcp,action=ct(table=0)
priority=100,in_port=4,ct_state=+trk,ct_mark=1,tcp,action=3
`, true, map[string][]string{"10.1.1.2": {orig1 + "mark=1," + state}, "10.1.1.4": {orig3 + "mark=2," + state}},
	}, {"ct_mark bit-fiddling", `table=0,priority=1,action=drop
table=0,priority=10,arp,action=normal
table=0,priority=10,icmp,action=normal
table=0,priority=100,in_port=1,tcp,action=ct(table=1)
table=0,priority=100,in_port=2,ct_state=-trk,tcp,action=ct(table=1,commit,exec(set_field:0x2/0x6->ct_mark))
table=1,in_port=1,ct_state=+new,tcp,action=ct(commit,exec(set_field:0x5/0x5->ct_mark)),2
table=1,in_port=1,ct_state=-new,tcp,action=2
table=1,in_port=2,ct_state=+trk,ct_mark=3,tcp,action=1
`, false, map[string][]string{"10.1.1.2": {orig1 + "mark=3," + state}},
	}, {"ct_mark from register", `priority=1,action=drop
priority=10,arp,action=normal
priority=10,icmp,action=normal
priority=100,in_port=1,tcp,action=load:1->NXM_NX_REG0[0..31],ct(commit,exec(move:NXM_NX_REG0[0..31]->NXM_NX_CT_MARK[])),2
priority=100,in_port=2,ct_state=-trk,tcp,action=ct(table=0)
priority=100,in_port=2,ct_state=+trk,ct_mark=1,tcp,action=1
priority=100,in_port=3,tcp,action=load:2->NXM_NX_REG0[0..31],ct(commit,exec(move:NXM_NX_REG0[0..31]->NXM_NX_CT_MARK[])),4
priority=100,in_port=4,ct_state=-trk,tcp,action=ct(table=0)
priority=100,in_port=4,ct_state=+trk,ct_mark=1,tcp,action=3
`, true, map[string][]string{"10.1.1.2": {orig1 + "mark=1," + state}, "10.1.1.4": {orig3 + "mark=2," + state}},
	}, {"ct_label", `priority=1,action=drop
priority=10,arp,action=normal
priority=10,icmp,action=normal
priority=100,in_port=1,tcp,action=ct(commit,exec(set_field:0x0a000d000005000001->ct_label)),2
priority=100,in_port=2,ct_state=-trk,tcp,action=ct(table=0)
priority=100,in_port=2,ct_state=+trk,ct_label=0x0a000d000005000001,tcp,action=1
priority=100,in_port=3,tcp,action=ct(commit,exec(set_field:0x2->ct_label)),4
priority=100,in_port=4,ct_state=-trk,tcp,action=ct(table=0)
priority=100,in_port=4,ct_state=+trk,ct_label=0x0a000d000005000001,tcp,action=3
`, true, map[string][]string{"10.1.1.2": {orig1 + "labels=0xa000d000005000001," + state}, "10.1.1.4": {orig3 + "labels=0x2," + state}},
	}, {"ct_label bit-fiddling", `table=0,priority=1,action=drop
table=0,priority=10,arp,action=normal
table=0,priority=10,icmp,action=normal
table=0,priority=100,in_port=1,tcp,action=ct(table=1)
table=0,priority=100,in_port=2,ct_state=-trk,tcp,action=ct(table=1,commit,exec(set_field:0x200000000/0x200000004->ct_label))
table=1,in_port=1,tcp,ct_state=+new,action=ct(commit,exec(set_field:0x5/0x5->ct_label)),2
table=1,in_port=1,tcp,ct_state=-new,action=2
table=1,in_port=2,ct_state=+trk,ct_label=0x200000001,tcp,action=1
`, false, map[string][]string{"10.1.1.2": {orig1 + "labels=0x200000001," + state}},
	}, {"ct metadata, multiple zones", `table=0,priority=1,action=drop
table=0,priority=10,arp,action=normal
table=0,priority=10,icmp,action=normal
table=0,priority=100,in_port=1,tcp,action=ct(zone=1,table=1)
table=0,priority=100,in_port=2,ct_state=-trk,tcp,action=ct(zone=1,table=1,commit,exec(set_field:0x200000000/0x200000004->ct_label,set_field:0x2/0x6->ct_mark))
table=1,in_port=1,tcp,ct_state=+new,action=ct(zone=1,commit,exec(set_field:0x5/0x5->ct_label,set_field:0x5/0x5->ct_mark)),ct(commit,zone=2),2
table=1,in_port=1,tcp,ct_state=-new,action=ct(zone=2),2
table=1,in_port=2,tcp,action=ct(zone=2),1
`, false, map[string][]string{"10.1.1.2": {orig1 + "zone=1,mark=3,labels=0x200000001," + state, orig1 + "zone=2," + state}},
	}})
}

// udpRefused sends a datagram from namespace ns to addr (host:port) on a
// connected socket and reports whether an ICMP port unreachable came
// back for it: the socket's next read fails with ECONNREFUSED.
func udpRefused(t testing.TB, ns, addr string) bool {
	t.Helper()
	var err error
	if doErr := netns.Do(ns, func() error {
		c, dialErr := net.Dial("udp", addr)
		if dialErr != nil {
			return dialErr
		}
		defer c.Close()
		if _, werr := c.Write([]byte("a\n")); werr != nil {
			return werr
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = c.Read(make([]byte, 64))
		return nil
	}); doErr != nil {
		t.Fatalf("UDP from %s to %s: %v", ns, addr, doErr)
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// TestConntrackICMPRelated is OVS's "conntrack - ICMP related": UDP from
// port 1 is committed, and from port 2 only ICMP related to a committed
// connection comes back: a datagram to a closed port has its port
// unreachable reach the sender, which the ICMP of no connection (an echo
// request) does not.
func TestConntrackICMPRelated(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=100,in_port=1,udp,action=ct(commit,exec(set_field:1->ct_mark)),2
priority=100,in_port=2,icmp,ct_state=-trk,action=ct(table=0)
priority=100,in_port=2,icmp,ct_state=+trk+rel,ct_mark=1,action=1
`)
		ns0, ns1 := r.hosts[0], r.hosts[1]
		if !udpRefused(t, ns0.ns, net.JoinHostPort(ns1.addr, "10000")) {
			t.Errorf("no port unreachable came back through the rule of related ICMP")
		}
		if _, received, out := ping(t, ns1.ns, ns0.addr, 56, 1); received != 0 {
			t.Errorf("an echo request from port 2, related to nothing, was answered:\n%s", out)
		}
		for rule, want := range map[string]int{
			"priority=100,udp,in_port=1 ":                   1,
			"priority=100,icmp,ct_state=-trk,in_port=2 ":    2,
			"icmp,ct_state=+rel+trk,ct_mark=0x1,in_port=2 ": 1,
		} {
			if got := flowPackets(t, r.d, r.br, rule); got != want {
				t.Errorf("the rule of %s counted %d packets, want %d", rule, got, want)
			}
		}
	})
}

// TestConntrackClear: ct_clear forgets what ct() found: after it the
// frame is untracked again (-trk), as OVS's "conntrack - floating IP"
// needs to look a frame up again once its addresses changed.
func TestConntrackClear(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `table=0,priority=1,action=drop
table=0,priority=10,arp,action=normal
table=0,priority=100,icmp,action=ct(commit,table=1)
table=1,priority=100,icmp,ct_state=+trk,action=ct_clear,goto_table:2
table=2,priority=100,icmp,ct_state=-trk,action=normal
table=2,priority=10,icmp,ct_state=+trk,action=drop
`)
		ns0, ns1 := r.hosts[0], r.hosts[1]
		if sent, received, out := ping(t, ns0.ns, ns1.addr, 56, 3); sent != 3 || received != 3 {
			t.Errorf("ping: %d of %d replies, want all 3:\n%s", received, sent, out)
		}
		if got := flowPackets(t, r.d, r.br, "icmp,ct_state=-trk actions=NORMAL"); got != 6 {
			t.Errorf("the rule of untracked frames after ct_clear counted %d packets, want the 3 requests and 3 replies", got)
		}
	})
}

// TestConntrackFloatingIP is OVS's "conntrack - floating IP": hosts reach
// each other directly, or by floating addresses (10.254.254.N) that the
// rules translate statelessly behind a gateway's MAC address; after the
// translation, ct_clear and ct() track the translated frame as a
// connection of its own, which dump-conntrack shows closing as the
// untranslated one does. (Without the ct_clear this passes too: as OVS's
// userspace datapath since 2.13, xswitch forgets a packet's connection
// when an action rewrites its addresses, where the kernel's keeps it;
// TestConntrackClear is the test of ct_clear.)
func TestConntrackFloatingIP(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		ns0, ns1 := r.hosts[0], r.hosts[1]
		setMAC(t, ns0.ns, "f0:00:00:01:01:01")
		setMAC(t, ns1.ns, "f0:00:00:01:01:02")
		for _, step := range [][]string{
			{ns0.ns, "neigh", "replace", "10.1.1.2", "lladdr", "f0:00:00:01:01:02", "dev", "eth0"},
			{ns1.ns, "neigh", "replace", "10.1.1.1", "lladdr", "f0:00:00:01:01:01", "dev", "eth0"},
			{ns0.ns, "neigh", "replace", "10.1.1.254", "lladdr", "f0:00:00:01:01:FE", "dev", "eth0"},
			{ns1.ns, "neigh", "replace", "10.1.1.254", "lladdr", "f0:00:00:01:01:FE", "dev", "eth0"},
			{ns0.ns, "route", "add", "default", "nexthop", "via", "10.1.1.254"},
			{ns1.ns, "route", "add", "default", "nexthop", "via", "10.1.1.254"},
		} {
			mustRun(t, "ip", append([]string{"-n", step[0]}, r.fromOVS(step[1:])...)...)
		}
		r.ovsFlows(t, `table=0,priority=10  ip action=ct(table=1)
table=0,priority=1   action=drop
table=1,priority=20  ip,ct_state=+trk+est,nw_dst=10.254.254.0/24 action=goto_table:10
table=1,priority=20  ip,ct_state=+trk+new,nw_dst=10.254.254.0/24 action=ct(commit,table=10)
table=1,priority=10  ip,ct_state=+trk+est action=goto_table:20
table=1,priority=10  ip,ct_state=+trk+new action=ct(commit,table=20)
table=1,priority=1   ip,ct_state=+trk+inv action=drop
table=10             ip,nw_dst=10.254.254.1 action=set_field:10.1.1.1->nw_dst,goto_table:11
table=10             ip,nw_dst=10.254.254.2 action=set_field:10.1.1.2->nw_dst,goto_table:11
table=11             ip,nw_src=10.1.1.1 action=set_field:10.254.254.1->nw_src,goto_table:12
table=11             ip,nw_src=10.1.1.2 action=set_field:10.254.254.2->nw_src,goto_table:12
table=12,priority=10 ip action=ct_clear,ct(table=13)
table=12,priority=1  action=drop
table=13             ip,ct_state=+trk+est action=goto_table:20
table=13             ip,ct_state=+trk+new action=ct(commit,table=20)
table=13             ip,ct_state=+trk+inv action=drop
table=20             ip,nw_src=10.1.1.1 action=set_field:f0:00:00:01:01:01->eth_src,goto_table:21
table=20             ip,nw_src=10.1.1.2 action=set_field:f0:00:00:01:01:02->eth_src,goto_table:21
table=20             ip,nw_src=10.254.254.0/24 action=set_field:f0:00:00:01:01:FE->eth_src,goto_table:21
table=21             ip,nw_dst=10.1.1.1 action=set_field:f0:00:00:01:01:01->eth_dst,output:1
table=21             ip,nw_dst=10.1.1.2 action=set_field:f0:00:00:01:01:02->eth_dst,output:2
`)
		serveTCP(t, ns0.ns, "", 1234, "ns0")
		// A closing connection is in TIME_WAIT, or CLOSING when the last
		// ACK crossed the FINs.
		closing := regexp.MustCompile(`TIME_WAIT|CLOSING`)
		wantAnswer(t, ns1.ns, ns0.addr, 1234, "ns0")
		r.waitConntrack(t, closing, "10.1.1.2", "tcp,orig=(src=10.1.1.2,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.1,dst=10.1.1.2,sport=<cleared>,dport=<cleared>),protoinfo=(state=<cleared>)")
		wantAnswer(t, ns1.ns, "10.254.254.1", 1234, "ns0")
		r.waitConntrack(t, closing, "10.254.254.2", "tcp,orig=(src=10.254.254.2,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.1,dst=10.254.254.2,sport=<cleared>,dport=<cleared>),protoinfo=(state=<cleared>)")
	})
}

// TestConntrackRestart: a daemon restart keeps the rules and forgets the
// connections, as OVS's does. Throughout, the side the firewall keeps
// out gets in neither while the daemon is down nor after it is back with
// an empty table; a connection established before resumes once its own
// side speaks again, its next segment committed anew (a TCP connection
// picked up in the middle, as OVS's tracker does), and the answer finds
// it.
func TestConntrackRestart(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=10,icmp,action=normal
priority=100,in_port=1,tcp,action=ct(commit),2
priority=100,in_port=2,tcp,ct_state=-trk,action=ct(table=0)
priority=100,in_port=2,tcp,ct_state=+trk+est,action=1
`)
		ns0, ns1 := r.hosts[0], r.hosts[1]
		serveTCP(t, ns1.ns, ns1.addr, 80, "ns1")
		inside := serveTCP(t, ns0.ns, ns0.addr, 80, "ns0")
		held, err := dialTCP(ns0.ns, 0, net.JoinHostPort(ns1.addr, "80"))
		if err != nil {
			t.Fatalf("TCP through the firewall: %v", err)
		}
		defer held.Close()
		if got, err := exchange(held); err != nil || got != "ns1" {
			t.Fatalf("TCP through the firewall: answer %q, %v", got, err)
		}
		flows := stripCounters(r.d.x(t, "dump-flows", r.br))

		// Port 2's side keeps knocking while the daemon restarts.
		stop := make(chan struct{})
		knocks := make(chan [2]int) // knocks, and how many got in
		go func() {
			var n [2]int
			for {
				select {
				case <-stop:
					knocks <- n
					return
				default:
				}
				n[0]++
				if _, err := askTCP(ns1.ns, 0, net.JoinHostPort(ns0.addr, "80")); err == nil {
					n[1]++
				}
			}
		}()
		r.d.stop(t, syscall.SIGTERM)
		r.d.start(t)
		waitPing(t, ns0.ns, ns1.addr, 5*time.Second)
		if again := stripCounters(r.d.x(t, "dump-flows", r.br)); again != flows {
			t.Errorf("dump-flows after the restart:\n%s\nbefore:\n%s", again, flows)
		}
		if dump := r.d.x(t, "dump-conntrack"); dump != "" {
			t.Errorf("dump-conntrack right after the restart:\n%s\nwant an empty table", dump)
		}
		time.Sleep(askTimeout) // one more knock on the restarted daemon
		close(stop)
		if n := <-knocks; n[0] < 2 || n[1] != 0 || len(inside.clients()) != 0 {
			t.Errorf("port 2's side knocked %d times around a restart and got in %d times through the firewall (the server saw %v); want some knocks, none in", n[0], n[1], inside.clients())
		}

		if got, err := exchange(held); err != nil || got != "ns1" {
			t.Errorf("the connection established before the restart, speaking again: answer %q, %v", got, err)
		}
		r.wantConntrack(t, "10.1.1.2", "tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=<cleared>,dport=<cleared>),reply=(src=10.1.1.2,dst=10.1.1.1,sport=<cleared>,dport=<cleared>),protoinfo=(state=<cleared>)")
	})
}

// TestConntrackInvalid is OVS's "conntrack - invalid": ports 1 and 3
// track without committing, so the SYN-ACK that answers finds no
// connection and, a SYN-ACK starting none, is +inv. Port 2's rules let
// only new traffic back and their connections fail; port 4's let invalid
// traffic through too, and theirs work. Nothing is committed.
func TestConntrackInvalid(t *testing.T) {
	inBothModes(t, 4, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `priority=1,action=drop
priority=10,arp,action=normal
priority=10,icmp,action=normal
priority=100,in_port=1,tcp,action=ct(),2
priority=100,in_port=2,ct_state=-trk,tcp,action=ct(table=0)
priority=100,in_port=2,ct_state=+trk+new,tcp,action=1
priority=100,in_port=3,tcp,action=ct(),4
priority=100,in_port=4,ct_state=-trk,tcp,action=ct(table=0)
priority=100,in_port=4,ct_state=+trk+inv,tcp,action=3
priority=100,in_port=4,ct_state=+trk+new,tcp,action=3
`)
		serveTCP(t, r.hosts[1].ns, r.hosts[1].addr, 80, "ns1")
		serveTCP(t, r.hosts[3].ns, r.hosts[3].addr, 80, "ns3")
		wantNoAnswer(t, r.hosts[0].ns, r.hosts[1].addr, 80)
		wantAnswer(t, r.hosts[2].ns, r.hosts[3].addr, 80, "ns3")
		if got := flowPackets(t, r.d, r.br, "ct_state=+inv+trk,in_port=4 "); got < 1 {
			t.Errorf("the rule of invalid frames from port 4 counted %d, want at least the SYN-ACK", got)
		}
		if dump := r.d.x(t, "dump-conntrack"); dump != "" {
			t.Errorf("dump-conntrack after ct() without commit:\n%s\nwant nothing", dump)
		}
	})
}

// TestConntrackNewConnections is OVS's "conntrack - new connections": a
// committed connection that has seen no reply stays +new, however many
// packets it has: TCP cannot get through rules that send on only +est,
// nor do three UDP datagrams of one way match +est.
func TestConntrackNewConnections(t *testing.T) {
	inBothModes(t, 2, func(t *testing.T, r *rig, _ bool) {
		r.ovsFlows(t, `table=0, priority=1,action=drop
table=0, priority=10,arp,action=normal
table=0, priority=100,tcp,action=ct(table=1)
table=0, priority=100,udp,action=ct(table=1)
table=1, priority=100,in_port=1,tcp,ct_state=+trk+new,action=ct(commit)
table=1, priority=100,in_port=1,udp,ct_state=+trk+new,action=ct(commit)
table=1, priority=100,in_port=1,ct_state=+trk+est,action=2
table=1, priority=100,in_port=2,ct_state=+trk+est,action=1
`)
		serveTCP(t, r.hosts[1].ns, r.hosts[1].addr, 80, "ns1")
		wantNoAnswer(t, r.hosts[0].ns, r.hosts[1].addr, 80)
		udp := r.udpPacket(t, 1, 2, 1, 2)
		const newUDP = "udp,ct_state=+new+trk,in_port=1 actions"
		r.injectCounted(t, 1, newUDP, udp, udp)
		if got := flowPackets(t, r.d, r.br, "ct_state=+est+trk,in_port=1 "); got != 0 {
			t.Errorf("the +est rule of port 1 counted %d packets after two UDP datagrams of one way, want none", got)
		}
		r.injectCounted(t, 1, newUDP, udp)
		if got := flowPackets(t, r.d, r.br, "ct_state=+est+trk,in_port=1 "); got != 0 {
			t.Errorf("the +est rule of port 1 counted %d packets after three UDP datagrams of one way, want none", got)
		}
	})
}
