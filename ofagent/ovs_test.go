package ofagent

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
)

// The tests here take Open vSwitch as the oracle of what a match means on
// the wire: ovs-ofctl add-flow -O OpenFlow13 sends the FLOW_MOD of a flow
// to a listener of the test, whose match matchFromOF must read as
// xswitch's parser reads the flow's text; and ovs-ofctl parse-oxm, which
// reads a match into Open vSwitch's own and prints it back in its
// canonical form, must print matchToOF's encoding of the flow as it
// prints the one it sent.

// lookOfctl finds ovs-ofctl or skips the test (fails it, when
// XSWITCH_REQUIRE_PRIVILEGED=1 says the environment must have it).
func lookOfctl(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		if os.Getenv("XSWITCH_REQUIRE_PRIVILEGED") == "1" {
			t.Fatal("ovs-ofctl is not installed (test/deps installs openvswitch-switch) and XSWITCH_REQUIRE_PRIVILEGED=1 forbids skipping")
		}
		t.Skip("skipping: ovs-ofctl is not installed (test/deps installs it, with openvswitch-switch)")
	}
	return path
}

// oracleFlows are flows of every kind of field and encoding: protocols,
// prefixes and masks, VLAN forms, ARP's and ICMP's fields over IPv4's
// and the ports', registers, and the NXM fields.
var oracleFlows = []string{
	"actions=drop",
	"in_port=1,actions=drop",
	"in_port=LOCAL,actions=drop",
	"dl_src=02:00:00:00:00:01,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=drop",
	"dl_type=0x88cc,actions=drop",
	"dl_vlan=5,actions=drop",
	"dl_vlan=0xffff,actions=drop",
	"dl_vlan_pcp=3,actions=drop",
	"dl_vlan=7,dl_vlan_pcp=2,actions=drop",
	"vlan_tci=0x1000/0x1000,actions=drop",
	"vlan_tci=0x0000/0x1fff,actions=drop",
	"vlan_tci=0x0000/0x1000,actions=drop",
	"ip,nw_src=10.0.0.0/8,nw_dst=192.168.1.1,actions=drop",
	"ip,nw_src=10.0.0.1/255.0.255.0,actions=drop",
	"ip,nw_tos=184,nw_ecn=2,nw_ttl=9,actions=drop",
	"ip,ip_frag=first,actions=drop",
	"ip,ip_frag=not_later,actions=drop",
	"tcp,tp_src=1024,tp_dst=80,actions=drop",
	"tcp,tp_dst=0x50/0xfff0,actions=drop",
	"udp,tp_src=53,actions=drop",
	"tcp6,ipv6_src=2001:db8::/32,tp_dst=443,actions=drop",
	"ipv6,ipv6_dst=fe80::1,nw_proto=89,actions=drop",
	"icmp,icmp_type=8,icmp_code=0,actions=drop",
	"icmp6,icmp_type=135,actions=drop",
	"arp,arp_op=1,arp_spa=10.0.0.1,arp_tpa=10.0.0.0/24,actions=drop",
	"reg0=5,reg15=0x10/0xff,actions=drop",
	"metadata=0x1234/0xffff,actions=drop",
	"table=3,ip,reg3=1,metadata=7,actions=drop",
}

// sameMeaning are the oracle flows whose match ovs-ofctl encodes as
// another match of the same meaning, each with why.
var sameMeaning = map[string]string{
	"vlan_tci=0x0000/0x1fff,actions=drop": "an untagged frame's key has TCI 0, so OVS's \"no tag\" (VLAN_VID 0x0000), " +
		"which xswitch reads as vlan_tci=0x0000, matches the same frames",
}

// TestMatchOracle checks the two directions against ovs-ofctl.
func TestMatchOracle(t *testing.T) {
	ofctl := lookOfctl(t)
	var ours, theirs []string
	for _, text := range oracleFlows {
		r := ruleOf(t, text)
		sent, table := ofctlFlowMod(t, ofctl, text)
		m, err := matchFromOF(sent, table)
		if err != nil {
			t.Errorf("%s: ovs-ofctl's match %s: %v", text, oxmText(sent), err)
			continue
		}
		if m != r.Match && sameMeaning[text] == "" {
			t.Errorf("%s: ovs-ofctl's match %s reads as %q", text, oxmText(sent), flow.FormatMatch(m))
		}
		ours, theirs = append(ours, oxmText(matchToOF(r.Match))), append(theirs, oxmText(sent))
	}
	ourNorm, theirNorm := parseOXM(t, ofctl, ours), parseOXM(t, ofctl, theirs)
	for i := range ours {
		if ourNorm[i] != theirNorm[i] {
			t.Errorf("%s: ovs-ofctl parse-oxm reads\n\txswitch's %s\n\tas        %s\n\tand its own %s\n\tas          %s",
				oracleFlows[i], ours[i], ourNorm[i], theirs[i], theirNorm[i])
		}
	}
}

// oxmText writes a match as parse-oxm reads it: each TLV as its header in
// hex and its value (and mask).
func oxmText(m openflow.Match) string {
	var parts []string
	for _, o := range m.Fields {
		body := hex.EncodeToString(o.Value)
		if o.Mask != nil {
			body += "/" + hex.EncodeToString(o.Mask)
		}
		parts = append(parts, fmt.Sprintf("%08x(%s)", o.Header(), body))
	}
	if len(parts) == 0 {
		return "<any>"
	}
	return strings.Join(parts, ", ")
}

// parseOXM runs ovs-ofctl parse-oxm OpenFlow13 on matches, one a line,
// and returns what it prints for each.
func parseOXM(t *testing.T, ofctl string, matches []string) []string {
	t.Helper()
	cmd := exec.Command(ofctl, "parse-oxm", "OpenFlow13")
	cmd.Stdin = strings.NewReader(strings.Join(matches, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ovs-ofctl parse-oxm: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(matches) {
		t.Fatalf("ovs-ofctl parse-oxm printed %d lines for %d matches:\n%s", len(lines), len(matches), out)
	}
	return lines
}

// ofctlFlowMod runs ovs-ofctl -O OpenFlow13 add-flow against a listener
// that speaks just enough OpenFlow for it (HELLO, BARRIER), and returns
// the match and table of the FLOW_MOD it sends.
func ofctlFlowMod(t *testing.T, ofctl, text string) (openflow.Match, uint8) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(ofctl, "-O", "OpenFlow13", "--no-names", "add-flow", "tcp:"+ln.Addr().String(), text)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s: ovs-ofctl add-flow: %v: %s", text, err, stderr.String())
		}
	}()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	var match openflow.Match
	var table uint8
	for {
		var header [8]byte
		if _, err := io.ReadFull(conn, header[:]); err != nil {
			t.Fatalf("%s: reading ovs-ofctl's messages: %v (%s)", text, err, stderr.String())
		}
		body := make([]byte, int(binary.BigEndian.Uint16(header[2:]))-len(header))
		if _, err := io.ReadFull(conn, body); err != nil {
			t.Fatal(err)
		}
		switch typ := header[1]; typ {
		case 0: // HELLO
			conn.Write([]byte{4, 0, 0, 8, 0, 0, 0, 0})
		case 14: // FLOW_MOD: 40 bytes to the table, then ofp_match
			table = body[16]
			match = oxmsOf(t, body[44:44+int(binary.BigEndian.Uint16(body[42:]))-4])
		case 20: // BARRIER_REQUEST: the reply ends ovs-ofctl's run
			reply := append([]byte{4, 21, 0, 8}, header[4:]...)
			conn.Write(reply)
			return match, table
		default:
			t.Fatalf("%s: ovs-ofctl sent message type %d", text, typ)
		}
	}
}

// oxmsOf decodes the TLVs of b, with the codec.
func oxmsOf(t testing.TB, b []byte) openflow.Match {
	t.Helper()
	var m openflow.Match
	for len(b) > 0 {
		o, n, err := openflow.DecodeOXM(b)
		if err != nil {
			t.Fatal(err)
		}
		m.Fields = append(m.Fields, o)
		b = b[n:]
	}
	return m
}

// TestOXMColumnOracle checks every encoding of every field in the field
// table's OXM column, the NXM ones that ovs-ofctl does not send among
// them: a match on the field in that encoding, with what the field needs
// in the rest of the match, means to ovs-ofctl parse-oxm what ovs-ofctl's
// own encoding of the same match means, and to matchFromOF the same
// match.
func TestOXMColumnOracle(t *testing.T) {
	ofctl := lookOfctl(t)
	var contexts []flow.Match
	for _, text := range []string{"", "ip", "ipv6", "arp", "tcp", "udp", "icmp", "icmp6", "dl_vlan=5"} {
		contexts = append(contexts, ruleOf(t, text+",actions=drop").Match)
	}
	var names, ours, canonical []string
	for _, f := range flow.Fields() {
		for i := range f.OXM {
			c := &f.OXM[i]
			var m flow.Match
			found := false
			for _, ctx := range contexts {
				if m, found = ctx, c.Needs == nil || c.Needs.Holds(&ctx); found {
					break
				}
			}
			if !found {
				t.Errorf("%s %#x:%d: no context gives what it needs, %s", f.Name, c.Class, c.Num, c.Needs)
				continue
			}
			v := flow.Value{Lo: 1}
			switch f.Name {
			case "vlan_tci", "vlan_vid":
				v.Lo = 0x1007
			case "nw_tos":
				v.Lo = 4
			}
			wire := matchToOF(m)
			wire.Fields = append(wire.Fields, openflow.OXM{Class: c.Class, Field: c.Num, Value: valueBytes(v, c.Bytes)})
			f.Set(&m.Key, v)
			f.Set(&m.Mask, flow.Ones(f.Bits))
			name := fmt.Sprintf("%s as %#x:%d", f.Name, c.Class, c.Num)
			got, err := matchFromOF(wire, 0)
			m.Key.Table, m.Mask.Table = 0, 0xff
			if err != nil || got != m {
				t.Errorf("%s: %s reads as %q, %v; want %q", name, oxmText(wire), flow.FormatMatch(got), err, flow.FormatMatch(m))
				continue
			}
			theirs, _ := ofctlFlowMod(t, ofctl, flow.FormatMatch(m)+",actions=drop")
			names, ours, canonical = append(names, name), append(ours, oxmText(wire)), append(canonical, oxmText(theirs))
		}
	}
	ourNorm, canonicalNorm := parseOXM(t, ofctl, ours), parseOXM(t, ofctl, canonical)
	for i := range ours {
		if ourNorm[i] != canonicalNorm[i] || strings.Contains(ourNorm[i], "error") {
			t.Errorf("%s: ovs-ofctl parse-oxm reads %s as %s, and its own %s as %s", names[i], ours[i], ourNorm[i], canonical[i], canonicalNorm[i])
		}
	}
	t.Logf("%d encodings checked", len(ours))
}
