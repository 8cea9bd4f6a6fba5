package test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xswitch/xswitch/internal/testenv"
	"github.com/xswitch/xswitch/openflow"
)

// The OpenFlow agent driven by real clients: Open vSwitch's ovs-ofctl
// against a passive target, an os-ken controller against an active one,
// and a raw socket sending what no client would.

// freeTCPPort gives a loopback TCP port nothing listens on now.
func freeTCPPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func requireTool(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not installed (test/deps installs it): %v", name, err)
	}
}

// ofctl runs ovs-ofctl -O OpenFlow13 verb against target, with args after
// it, and fails the test if it fails.
func ofctl(t testing.TB, verb, target string, args ...string) string {
	t.Helper()
	r := run(t, "ovs-ofctl", append([]string{"-O", "OpenFlow13", "--no-names", verb, target}, args...)...)
	if r.code != 0 {
		t.Fatalf("ovs-ofctl %s %s %s: exit %d\n%s%s", verb, target, strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// listenForOfctl points br at a passive target on a free loopback port and
// waits until ovs-ofctl gets an answer there; it returns the target
// ovs-ofctl connects to.
func listenForOfctl(t *testing.T, d *daemon, br string) string {
	t.Helper()
	port := freeTCPPort(t)
	d.x(t, "set-controller", br, fmt.Sprintf("ptcp:%d:127.0.0.1", port))
	target := fmt.Sprintf("tcp:127.0.0.1:%d", port)
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := run(t, "ovs-ofctl", "-O", "OpenFlow13", "show", target)
		if r.code == 0 {
			return target
		}
		if time.Now().After(deadline) {
			t.Fatalf("ovs-ofctl show %s never succeeded: %s%s\ndaemon log:\n%s", target, r.stdout, r.stderr, d.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var datapathIDInShow = regexp.MustCompile(`datapath_id: ([0-9a-f]{16})`)

// TestOpenFlowOvsOfctl: ovs-ofctl, speaking OpenFlow 1.3 to a ptcp:
// target, sees the switch (show, dump-ports-desc, dump-tables,
// dump-ports), edits its flows (add-flow, add-flows, mod-flows,
// del-flows) and sends a packet-out; traffic between the namespaces
// follows what it installed, and xswitch's own dump-flows and ovs-ofctl's
// agree both ways.
func TestOpenFlowOvsOfctl(t *testing.T) {
	testenv.RequireRoot(t)
	requireTool(t, "ovs-ofctl")
	r := newRig(t, 2)
	d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
	target := listenForOfctl(t, d, br)
	if got, want := strings.TrimSpace(d.x(t, "get-controller", br)), "ptcp:"+strings.TrimPrefix(target, "tcp:127.0.0.1:")+":127.0.0.1"; got != want {
		t.Errorf("get-controller: %q, want %q", got, want)
	}
	ports := ofports(t, d, br)
	pa, pb := ports[a.name], ports[b.name]

	show := ofctl(t, "show", target)
	m := datapathIDInShow.FindStringSubmatch(d.x(t, "show"))
	if m == nil {
		t.Fatalf("xswitch show gives no datapath_id:\n%s", d.x(t, "show"))
	}
	for _, want := range []string{"OFPT_FEATURES_REPLY (OF1.3)", "dpid:" + m[1], fmt.Sprintf(" %d(%s): addr:", pa, a.name), fmt.Sprintf(" %d(%s): addr:", pb, b.name)} {
		if !strings.Contains(show, want) {
			t.Errorf("ovs-ofctl show lacks %q:\n%s", want, show)
		}
	}
	if desc := ofctl(t, "dump-ports-desc", target); !strings.Contains(desc, a.name) || !strings.Contains(desc, b.name) || !regexp.MustCompile(`state: +LIVE`).MatchString(desc) {
		t.Errorf("dump-ports-desc lacks the ports or their state:\n%s", desc)
	}

	// An empty table carries nothing; ovs-ofctl's flows carry the pings.
	ofctl(t, "del-flows", target)
	if _, received, _ := ping(t, a.ns, b.addr, 56, 2); received != 0 {
		t.Fatalf("%d pings crossed an empty table", received)
	}
	ofctl(t, "add-flow", target, fmt.Sprintf("priority=10,in_port=%d,actions=output:%d", pa, pb))
	flowsFile := filepath.Join(t.TempDir(), "flows")
	if err := os.WriteFile(flowsFile, []byte(fmt.Sprintf("priority=10,in_port=%d,actions=output:%d\n", pb, pa)), 0o644); err != nil {
		t.Fatal(err)
	}
	ofctl(t, "add-flows", target, flowsFile)
	requirePing(t, a.ns, b.addr, 56)
	xdump := d.x(t, "dump-flows", br)
	for _, want := range []string{fmt.Sprintf("priority=10,in_port=%d actions=output:%d", pa, pb), fmt.Sprintf("priority=10,in_port=%d actions=output:%d", pb, pa)} {
		if !strings.Contains(xdump, want) {
			t.Errorf("xswitch dump-flows lacks ovs-ofctl's %q:\n%s", want, xdump)
		}
	}
	if n := flowPackets(t, d, br, fmt.Sprintf("in_port=%d ", pa)); n < 3 {
		t.Errorf("the rule ovs-ofctl added counted %d packets, want the pings", n)
	}

	// What the CLI adds, ovs-ofctl sees; what ovs-ofctl deletes, goes.
	d.x(t, "add-flow", br, "priority=20,icmp,actions=drop")
	odump := ofctl(t, "dump-flows", target)
	if !strings.Contains(odump, "priority=20,icmp actions=drop") {
		t.Errorf("ovs-ofctl dump-flows lacks the CLI's rule:\n%s", odump)
	}
	if !regexp.MustCompile(fmt.Sprintf(`n_packets=([3-9]|\d\d+), n_bytes=\d+, priority=10,in_port=%d actions=output:%d`, pa, pb)).MatchString(odump) {
		t.Errorf("ovs-ofctl dump-flows lacks the counted rule:\n%s", odump)
	}
	if _, received, _ := ping(t, a.ns, b.addr, 56, 2); received != 0 {
		t.Fatalf("%d pings crossed the CLI's drop rule", received)
	}
	ofctl(t, "del-flows", target, "icmp")
	requirePing(t, a.ns, b.addr, 56)
	if strings.Contains(d.x(t, "dump-flows", br), "icmp") {
		t.Errorf("ovs-ofctl del-flows icmp left the rule:\n%s", d.x(t, "dump-flows", br))
	}

	// mod-flows changes the actions in place.
	ofctl(t, "mod-flows", target, fmt.Sprintf("in_port=%d,actions=drop", pa))
	if _, received, _ := ping(t, a.ns, b.addr, 56, 2); received != 0 {
		t.Fatalf("%d pings crossed after mod-flows made the rule drop", received)
	}
	ofctl(t, "mod-flows", target, fmt.Sprintf("in_port=%d,actions=output:%d", pa, pb))
	requirePing(t, a.ns, b.addr, 56)

	// Counters: ovs-ofctl's dump-ports and dump-tables give xswitch's.
	time.Sleep(300 * time.Millisecond) // the last replies counted
	own := dumpPorts(t, d, br)
	portsOut := ofctl(t, "dump-ports", target)
	rx := regexp.MustCompile(fmt.Sprintf(`port +%d: rx pkts=(\d+), bytes=(\d+)`, pa)).FindStringSubmatch(portsOut)
	if rx == nil {
		t.Fatalf("dump-ports lacks port %d:\n%s", pa, portsOut)
	}
	if got, want := atou(rx[1]), own[pa].rxPkts; got != want {
		t.Errorf("ovs-ofctl dump-ports: port %d rx pkts=%d, xswitch dump-ports %d", pa, got, want)
	}
	tables := ofctl(t, "dump-tables", target)
	if !strings.Contains(tables, "table 0:") || !regexp.MustCompile(`active=2, lookup=\d+, matched=\d+`).MatchString(tables) {
		t.Errorf("dump-tables lacks table 0 with its 2 rules:\n%s", tables)
	}

	// A packet-out reaches the namespace it is sent to.
	frame := udpFrame(t, nsMAC(t, a.ns, "eth0"), nsMAC(t, b.ns, "eth0"), a.addr, b.addr, 9999, []byte("sent by ovs-ofctl packet-out"))
	got := receiveUDP(t, b.ns, b.addr, 9999, func() {
		ofctl(t, "packet-out", target, fmt.Sprintf("in_port=controller,packet=%s,actions=output:%d", hex.EncodeToString(frame), pb))
	})
	if got != "sent by ovs-ofctl packet-out" {
		t.Errorf("the namespace received %q from the packet-out", got)
	}
	// Flows from a controller are not saved; the CLI's are.
	d.x(t, "add-flow", br, "priority=30,arp,actions=NORMAL")
	d.stop(t, syscall.SIGTERM)
	d.start(t)
	after := d.x(t, "dump-flows", br)
	if !strings.Contains(after, "priority=30,arp actions=NORMAL") || strings.Contains(after, "in_port=") {
		t.Errorf("after a restart the table should hold the CLI's rule and none of ovs-ofctl's:\n%s", after)
	}
}

// TestOpenFlowFlowsReadBackAsSent: what ovs-ofctl adds, its dump-flows
// reads back as it reads its own flows (masked set_fields among them);
// a controller's FLOW_MODs come back byte for byte in flow stats (an
// output to a port with max_len, a match whose vlan_vid comes before
// eth_type, a mask of all ones written out), and do what they mean: the
// max_len of an output to a port cuts no frame.
func TestOpenFlowFlowsReadBackAsSent(t *testing.T) {
	testenv.RequireRoot(t)
	requireTool(t, "ovs-ofctl")
	r := newRig(t, 2)
	d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
	target := listenForOfctl(t, d, br)
	ports := ofports(t, d, br)
	pa, pb := ports[a.name], ports[b.name]

	ofctl(t, "del-flows", target)
	for _, f := range []string{
		// OVS's ofproto-dpif.at, "Multi-VLAN actions".
		fmt.Sprintf("priority=5,in_port=%d,vlan_tci=0x1101/0x1fff,actions=push_vlan:0x8100,set_field:0x1201/0x1fff->vlan_tci,output:%d", pa, pb),
		fmt.Sprintf("priority=6,in_port=%d,vlan_tci=0x1103/0x1fff,actions=set_field:0x1203/0x1fff->vlan_tci,output:%d", pa, pb),
		"priority=7,ip,nw_src=10.0.0.0/8,actions=set_field:00:00:00:00:00:77/00:00:00:00:00:ff->eth_src,dec_ttl,load:0x5->NXM_NX_REG0[0..7],resubmit(,2)",
		"priority=8,tcp,tp_dst=80,actions=mod_tp_dst:8080,write_metadata:0x1/0xff,goto_table:3",
		fmt.Sprintf("priority=9,arp,actions=CONTROLLER:128,clear_actions,write_actions(output:%d)", pb),
		fmt.Sprintf("priority=10,ipv6,actions=set_field:2001:db8::1->ipv6_dst,move:NXM_NX_IPV6_SRC[0..31]->NXM_NX_REG1[],output:%d", pb),
	} {
		ofctl(t, "add-flow", target, f)
		theirs := run(t, "ovs-ofctl", "-O", "OpenFlow13", "parse-flow", f).stdout
		_, want, ok := strings.Cut(strings.TrimSpace(theirs), "): ADD ")
		if !ok {
			t.Fatalf("ovs-ofctl parse-flow %s: %s", f, theirs)
		}
		if dump := ofctl(t, "dump-flows", target); !strings.Contains(dump, ", "+want+"\n") {
			t.Errorf("ovs-ofctl dump-flows does not give back %s as ovs-ofctl reads it, %s:\n%s", f, want, dump)
		}
	}

	// A controller's flows: each direction's output to the other port
	// with a max_len of 64, and one that no ping meets, as a conformance
	// suite writes it.
	c := dialOF(t, target)
	c.hello()
	exchange := func(m openflow.Message) [][]byte {
		t.Helper()
		c.write(openflow.Append(openflow.Append(nil, 1, m), 2, openflow.BarrierRequest{}))
		var got [][]byte
		for {
			c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			raw, err := c.rd.Next()
			if err != nil {
				t.Fatalf("reading from the switch: %v", err)
			}
			switch h, _ := openflow.ParseHeader(raw); h.Type {
			case openflow.TypeBarrierReply:
				return got
			case openflow.TypeEchoRequest, openflow.TypePacketIn, openflow.TypeFlowRemoved, openflow.TypePortStatus:
			default:
				got = append(got, append([]byte(nil), raw...))
			}
		}
	}
	inPort := func(p int) openflow.OXM {
		return openflow.OXM{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMInPort, Value: binary.BigEndian.AppendUint32(nil, uint32(p))}
	}
	add := func(priority uint16, fields []openflow.OXM, out int, maxLen uint16) openflow.FlowMod {
		return openflow.FlowMod{Command: openflow.FlowAdd, Priority: priority, BufferID: openflow.NoBuffer,
			OutPort: openflow.PortAny, OutGroup: openflow.GroupAny, Match: openflow.Match{Fields: fields},
			Instructions: []openflow.Instruction{openflow.InstructionApplyActions{Actions: []openflow.Action{
				openflow.ActionOutput{Port: uint32(out), MaxLen: maxLen}}}}}
	}
	sent := map[uint16]openflow.FlowMod{
		100: add(100, []openflow.OXM{inPort(pa)}, pb, 64),
		101: add(101, []openflow.OXM{inPort(pb)}, pa, 64),
		102: add(102, []openflow.OXM{
			{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMVLANVID, Value: []byte{0x10, 0x05}},
			{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMEthType, Value: []byte{0x08, 0x00}},
			{Class: openflow.OXMClassOpenFlowBasic, Field: openflow.OXMIPv4Dst, Value: []byte{10, 0, 0, 2}, Mask: []byte{0xff, 0xff, 0xff, 0xff}},
		}, pb, 0xffe5),
	}
	if got := exchange(openflow.FlowMod{Command: openflow.FlowDelete, TableID: openflow.TableAll, BufferID: openflow.NoBuffer,
		OutPort: openflow.PortAny, OutGroup: openflow.GroupAny}); len(got) != 0 {
		t.Fatalf("deleting every flow: %d replies", len(got))
	}
	for _, fm := range sent {
		if got := exchange(fm); len(got) != 0 {
			_, m, _ := openflow.Decode(got[0])
			t.Fatalf("the flow mod of priority %d: %#v", fm.Priority, m)
		}
	}
	replies := exchange(openflow.MultipartRequest{MType: openflow.MultipartFlow, Body: openflow.FlowStatsRequest{
		TableID: openflow.TableAll, OutPort: openflow.PortAny, OutGroup: openflow.GroupAny}})
	seen := 0
	for _, reply := range replies {
		for body := reply[openflow.HeaderLen+8:]; len(body) > 0; {
			n := int(binary.BigEndian.Uint16(body))
			entry := body[:n]
			body = body[n:]
			fm, ok := sent[binary.BigEndian.Uint16(entry[12:])]
			if !ok {
				t.Errorf("flow stats give a flow of priority %d, which was not sent", binary.BigEndian.Uint16(entry[12:]))
				continue
			}
			seen++
			const flowStatsFixed = 48 // ofp_flow_stats before its match
			l := int(binary.BigEndian.Uint16(entry[flowStatsFixed+2:]))
			match, instructions := entry[flowStatsFixed+4:flowStatsFixed+l], entry[flowStatsFixed+(l+7)/8*8:]
			wantMatch, wantInstructions := openflow.FlowModEncoded(openflow.Append(nil, 1, fm))
			if !bytes.Equal(match, wantMatch) || !bytes.Equal(instructions, wantInstructions) {
				t.Errorf("the flow of priority %d comes back as\n\t%x %x\nnot as sent\n\t%x %x", fm.Priority, match, instructions, wantMatch, wantInstructions)
			}
		}
	}
	if seen != len(sent) {
		t.Errorf("flow stats give %d of the %d flows", seen, len(sent))
	}

	// max_len matters for an output to the controller alone: frames of
	// 1,028 bytes cross whole.
	requirePing(t, a.ns, b.addr, 1000)
	want := fmt.Sprintf("priority=100,in_port=%d actions=output:%d", pa, pb)
	if dump := d.x(t, "dump-flows", br); !strings.Contains(dump, want) {
		t.Errorf("xswitch dump-flows lacks %q:\n%s", want, dump)
	}
	if dump := ofctl(t, "dump-flows", target); !strings.Contains(dump, want) {
		t.Errorf("ovs-ofctl dump-flows lacks %q:\n%s", want, dump)
	}
}

// udpFrame builds an Ethernet/IPv4/UDP frame.
func udpFrame(t testing.TB, src, dst, srcIP, dstIP string, port int, payload []byte) []byte {
	t.Helper()
	smac, err1 := net.ParseMAC(src)
	dmac, err2 := net.ParseMAC(dst)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad MACs %q %q", src, dst)
	}
	eth := &layers.Ethernet{SrcMAC: smac, DstMAC: dmac, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP(srcIP).To4(), DstIP: net.ParseIP(dstIP).To4()}
	udp := &layers.UDP{SrcPort: 40000, DstPort: layers.UDPPort(port)}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// receiveUDP listens on addr:port in namespace ns, runs send, and returns
// the first datagram's payload (empty if none came within 5 s).
func receiveUDP(t testing.TB, ns, addr string, port int, send func()) string {
	t.Helper()
	script := fmt.Sprintf(`import socket,sys
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
s.bind((%q,%d))
print("ready",flush=True)
s.settimeout(5)
try:
    print(s.recv(2048).decode(),flush=True)
except socket.timeout:
    pass
`, addr, port)
	cmd := exec.Command("ip", "netns", "exec", ns, "python3", "-c", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 4096)
	n, _ := out.Read(buf) // "ready"
	if !strings.HasPrefix(string(buf[:n]), "ready") {
		t.Fatalf("the UDP receiver in %s did not start: %q", ns, buf[:n])
	}
	send()
	var all []byte
	for {
		n, err := out.Read(buf)
		all = append(all, buf[:n]...)
		if err != nil {
			break
		}
	}
	cmd.Wait()
	return strings.TrimSpace(string(all))
}

// osken is an os-ken controller running the test's learning switch.
type osken struct {
	t    *testing.T
	port int
	bg   *background
}

func startOsKen(t *testing.T, port int) *osken {
	t.Helper()
	app, err := filepath.Abs("osken/learning_switch.py")
	if err != nil {
		t.Fatal(err)
	}
	o := &osken{t: t, port: port}
	o.bg = startBackground(t, "osken-manager", "--ofp-listen-host", "127.0.0.1", "--ofp-tcp-listen-port", strconv.Itoa(port), app)
	return o
}

// stop kills the controller and waits for it.
func (o *osken) stop() {
	o.bg.cmd.Process.Kill()
	o.bg.wait(o.t, 5*time.Second)
}

// waitConnected waits until xswitch show says the bridge's controller is
// connected (or not).
func waitConnected(t *testing.T, d *daemon, br string, connected bool, within time.Duration) {
	t.Helper()
	want := fmt.Sprintf("is_connected: %v", connected)
	deadline := time.Now().Add(within)
	for {
		show := d.x(t, "show")
		if strings.Contains(show, want) || !connected && !strings.Contains(show, "is_connected: true") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the controller is not %q within %v:\n%s\ndaemon log:\n%s", want, within, show, d.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestOpenFlowOsKenLearningSwitch: an os-ken controller (fail mode
// secure) clears the table, installs a table-miss flow to itself and
// learns from packet-ins; pings and TCP cross through the flows it
// installs. Killed, it leaves the switch forwarding on those flows;
// restarted, it is reconnected to and takes over again.
func TestOpenFlowOsKenLearningSwitch(t *testing.T) {
	testenv.RequireRoot(t)
	requireTool(t, "osken-manager")
	r := newRig(t, 2)
	d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
	port := freeTCPPort(t)
	ctl := startOsKen(t, port)
	d.x(t, "set-fail-mode", br, "secure")
	if got := strings.TrimSpace(d.x(t, "get-fail-mode", br)); got != "secure" {
		t.Errorf("get-fail-mode: %q", got)
	}
	d.x(t, "set-controller", br, fmt.Sprintf("tcp:127.0.0.1:%d", port))
	waitConnected(t, d, br, true, 15*time.Second)

	waitPing(t, a.ns, b.addr, 10*time.Second)
	requirePing(t, a.ns, b.addr, 56)
	transferTCP(t, a.ns, b.ns, b.addr, b.addr, 1<<20)
	flows := d.x(t, "dump-flows", br)
	if !strings.Contains(flows, "CONTROLLER") || !strings.Contains(flows, "priority=10,") {
		t.Fatalf("the controller's table-miss and learned flows are not in dump-flows:\n%s", flows)
	}

	ctl.stop()
	// Its output is whole (and no longer written to) once it has exited.
	if !strings.Contains(ctl.bg.output.String(), "packet-in in_port=") {
		t.Errorf("the controller logged no packet-in:\n%s", ctl.bg.output.String())
	}
	waitConnected(t, d, br, false, 5*time.Second)
	requirePing(t, a.ns, b.addr, 56)

	ctl = startOsKen(t, port)
	waitConnected(t, d, br, true, 15*time.Second)
	waitPing(t, a.ns, b.addr, 10*time.Second)
	requirePing(t, a.ns, b.addr, 56)
	ctl.stop()
}

// TestOpenFlowFailModes: with a controller that never answers, fail mode
// standalone forwards as a learning switch whatever the table says;
// secure forwards by the table alone.
func TestOpenFlowFailModes(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
	d.x(t, "set-controller", br, fmt.Sprintf("tcp:127.0.0.1:%d", freeTCPPort(t)))
	d.x(t, "del-flows", br)
	waitPing(t, a.ns, b.addr, 5*time.Second) // standalone, the default
	requirePing(t, a.ns, b.addr, 56)
	d.x(t, "set-fail-mode", br, "secure")
	if _, received, _ := ping(t, a.ns, b.addr, 56, 2); received != 0 {
		t.Fatalf("%d pings crossed an empty table in fail mode secure", received)
	}
	d.x(t, "del-fail-mode", br)
	waitPing(t, a.ns, b.addr, 5*time.Second)
	d.x(t, "del-controller", br)
	if _, received, _ := ping(t, a.ns, b.addr, 56, 2); received != 0 {
		t.Fatalf("%d pings crossed an empty table with no controller configured", received)
	}
}

// ofClient is a raw OpenFlow connection that can send anything.
type ofClient struct {
	t       *testing.T
	nc      net.Conn
	rd      *openflow.Reader
	replies chan string // echo replies, once keepAlive reads for it
}

func dialOF(t *testing.T, target string) *ofClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", strings.TrimPrefix(target, "tcp:"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &ofClient{t: t, nc: nc, rd: openflow.NewReader(nc, 1<<16)}
}

func (c *ofClient) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("writing to the switch: %v", err)
	}
}

// read returns the next message, or nil and the error that ended the
// connection.
func (c *ofClient) read() (openflow.Message, error) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	raw, err := c.rd.Next()
	if err != nil {
		return nil, err
	}
	_, m, err := openflow.Decode(raw)
	if err != nil {
		c.t.Fatalf("the switch sent a message that does not decode: %v (% x)", err, raw)
	}
	return m, nil
}

// hello does the handshake.
func (c *ofClient) hello() {
	c.t.Helper()
	c.write(openflow.Append(nil, 1, openflow.Hello{Versions: []uint8{openflow.Version}}))
	if m, err := c.read(); err != nil {
		c.t.Fatalf("no hello from the switch: %v", err)
	} else if _, ok := m.(openflow.Hello); !ok {
		c.t.Fatalf("the switch's first message is %T, not a hello", m)
	}
}

// expectError reads until an OFPT_ERROR and checks its type and code.
func (c *ofClient) expectError(what string, typ openflow.ErrorType, code uint16) {
	c.t.Helper()
	for {
		m, err := c.read()
		if err != nil {
			c.t.Fatalf("%s: no error reply before %v", what, err)
		}
		if e, ok := m.(openflow.Error); ok {
			if e.ErrType != typ || e.Code != code {
				c.t.Errorf("%s: error type %d code %d, want %d/%d", what, e.ErrType, e.Code, typ, code)
			}
			return
		}
	}
}

// expectClosed reads until the switch closes the connection.
func (c *ofClient) expectClosed(what string) {
	c.t.Helper()
	for {
		if _, err := c.read(); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				c.t.Fatalf("%s: the switch kept the connection open", what)
			}
			return
		}
	}
}

// keepAlive answers the switch's echo requests from now on, as a
// controller does, and hands the echo replies to echo.
func (c *ofClient) keepAlive() {
	c.replies = make(chan string, 16)
	c.nc.SetReadDeadline(time.Time{})
	go func() {
		defer close(c.replies)
		for {
			raw, err := c.rd.Next()
			if err != nil {
				return
			}
			h, _ := openflow.ParseHeader(raw)
			switch _, m, _ := openflow.Decode(raw); m := m.(type) {
			case openflow.EchoRequest:
				// A deadline of its own: the last one c.write set may
				// have passed long ago (the switch probes after 5 s).
				c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
				c.nc.Write(openflow.Append(nil, h.Xid, openflow.EchoReply(m)))
			case openflow.EchoReply:
				c.replies <- string(m.Data)
			}
		}
	}()
}

// echo checks that the connection still answers.
func (c *ofClient) echo() {
	c.t.Helper()
	c.write(openflow.Append(nil, 77, openflow.EchoRequest{Data: []byte("still there?")}))
	if c.replies != nil {
		select {
		case data, ok := <-c.replies:
			if !ok || data != "still there?" {
				c.t.Fatalf("no echo reply (the connection ended: %v)", !ok)
			}
		case <-time.After(5 * time.Second):
			c.t.Fatal("no echo reply in 5 s")
		}
		return
	}
	for {
		m, err := c.read()
		if err != nil {
			c.t.Fatalf("no echo reply: %v", err)
		}
		if r, ok := m.(openflow.EchoReply); ok && string(r.Data) == "still there?" {
			return
		}
	}
}

// TestOpenFlowBadInput: garbage, a wrong version, a truncated header, a
// length that lies, a message of 64 KiB and a flood of messages: each is
// refused with the right error or ends its connection with a logged
// reason, while another controller's connection and the forwarding go on.
func TestOpenFlowBadInput(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRig(t, 2)
	d, br, a, b := r.d, r.br, r.hosts[0], r.hosts[1]
	target := listenForOfctl(t, d, br)
	bystander := dialOF(t, target)
	bystander.hello()
	bystander.keepAlive()

	garbage := dialOF(t, target)
	garbage.write([]byte("GET / HTTP/1.1\r\nHost: xswitch\r\n\r\n"))
	garbage.expectError("garbage instead of a hello", openflow.ErrHelloFailed, openflow.HelloFailedIncompatible)
	garbage.expectClosed("garbage instead of a hello")

	old := dialOF(t, target)
	old.write([]byte{0x01, 0x00, 0x00, 0x08, 0, 0, 0, 1}) // an OpenFlow 1.0 hello
	old.expectError("an OpenFlow 1.0 hello", openflow.ErrHelloFailed, openflow.HelloFailedIncompatible)
	old.expectClosed("an OpenFlow 1.0 hello")

	short := dialOF(t, target)
	short.hello()
	short.write([]byte{0x04, 0x02, 0x00, 0x04, 0, 0, 0, 2}) // an echo request 4 bytes long: shorter than its header
	short.expectClosed("a length shorter than the header")

	lying := dialOF(t, target)
	lying.hello()
	// A flow mod whose length covers only its header: refused, and the
	// connection goes on.
	lying.write([]byte{0x04, byte(openflow.TypeFlowMod), 0x00, 0x10, 0, 0, 0, 9, 1, 2, 3, 4, 5, 6, 7, 8})
	lying.expectError("a flow mod 16 bytes long", openflow.ErrBadRequest, openflow.BadRequestBadLen)
	lying.echo()

	big := dialOF(t, target)
	big.hello()
	data := make([]byte, 0xffff-openflow.HeaderLen)
	for i := range data {
		data[i] = byte(i)
	}
	big.write(openflow.Append(nil, 5, openflow.EchoRequest{Data: data}))
	if m, err := big.read(); err != nil {
		t.Fatalf("no answer to a 64 KiB echo request: %v", err)
	} else if r, ok := m.(openflow.EchoReply); !ok || len(r.Data) != len(data) {
		t.Errorf("a 64 KiB echo request got %T with %d bytes", m, len(r.Data))
	}
	// 64 KiB of garbage inside a flow mod.
	garbageMod := append([]byte{0x04, byte(openflow.TypeFlowMod), 0xff, 0xff, 0, 0, 0, 6}, data...)
	big.write(garbageMod)
	big.expectError("64 KiB of garbage in a flow mod", openflow.ErrBadMatch, openflow.BadMatchBadType)
	big.echo()

	// A flood: a million echo requests from a controller that reads none
	// of the replies: once the sockets' buffers are full the switch stops
	// reading it, and drops it when its replies have waited 10 s.
	flood := dialOF(t, target)
	flood.hello()
	var burst []byte
	for i := 0; i < 1000; i++ {
		burst = openflow.Append(burst, uint32(i), openflow.EchoRequest{Data: []byte("flood")})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 1000; i++ {
			flood.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := flood.nc.Write(burst); err != nil {
				return // the switch gave up on a controller that does not read
			}
		}
	}()
	requirePing(t, a.ns, b.addr, 56)
	bystander.echo()
	<-done

	requirePing(t, a.ns, b.addr, 56)
	bystander.echo()
	for _, why := range []string{"reading a message: openflow: bad message length: 4", "writing to the controller"} {
		if !strings.Contains(d.log(), why) {
			t.Errorf("the daemon's log does not give the reason %q:\n%s", why, d.log())
		}
	}
}
