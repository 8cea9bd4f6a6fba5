package bench

import "fmt"

// Rules are what a case installs in a switch, in ovs-ofctl syntax: its
// groups and meters, then its flows in place of the switch's own.
type Rules struct {
	Groups, Meters, Flows []string
}

// SelectGroupRules send the bench frame from the generator's port through
// a select group of four buckets, each to the receiver's port, as traffic
// spread over four equal next hops would be, and switch the rest as usual.
func SelectGroupRules() Rules {
	group := "group_id=1,type=select"
	for i := range 4 {
		group += fmt.Sprintf(",bucket=bucket_id:%d,output:%d", i, rcvOFPort)
	}
	return Rules{Groups: []string{group},
		Flows: []string{fmt.Sprintf("priority=%d,udp,in_port=%d,actions=group:1", forwardPriority, genOFPort), defaultFlow}}
}

// MeterRules send the bench frame from the generator's port through a
// meter far above any rate it reaches, to the receiver's port, and switch
// the rest as usual: what metering costs per frame.
func MeterRules() Rules {
	return Rules{Meters: []string{"meter=1 pktps bands=type=drop rate=100000000"},
		Flows: []string{fmt.Sprintf("priority=%d,udp,in_port=%d,actions=meter:1,output:%d", forwardPriority, genOFPort, rcvOFPort), defaultFlow}}
}

// StatefulFirewallRules are a stateful firewall between the generator's
// port and the receiver's, as OVS's conntrack documentation builds one:
// IP from the generator's side is committed on its way out, IP from the
// receiver's side is tracked and goes back only if it belongs to a
// committed connection (+est, or +rel: an ICMP error about one), ARP is
// switched, and everything else is dropped. The bench's traffic goes out
// from the generator's side, so each of its frames passes ct(commit) on a
// connection the tracker holds (+new until a reply comes, as OVS's
// userspace tracker and the kernel's call it); TCP's segments back, ACKs
// among them, pass ct(table=1) and the +est rule.
func StatefulFirewallRules() Rules {
	return Rules{Flows: []string{
		fmt.Sprintf("table=0,priority=100,in_port=%d,ip,actions=ct(commit),output:%d", genOFPort, rcvOFPort),
		fmt.Sprintf("table=0,priority=100,in_port=%d,ip,actions=ct(table=1)", rcvOFPort),
		"table=0,priority=10,arp,actions=NORMAL",
		"table=0,priority=0,actions=drop",
		fmt.Sprintf("table=1,priority=100,in_port=%d,ct_state=+trk+est,ip,actions=output:%d", rcvOFPort, genOFPort),
		fmt.Sprintf("table=1,priority=100,in_port=%d,ct_state=+trk+rel,ip,actions=output:%d", rcvOFPort, genOFPort),
		"table=1,priority=0,actions=drop",
	}}
}

// Ports as ManyFlows's flows number them: the generator's veth is added
// to a switch first, the receiver's second.
const (
	genOFPort = 1
	rcvOFPort = 2
)

// forwardPriority is the priority of the one rule of ManyFlows that the
// bench frame matches. Every other rule's priority is higher, as deny
// rules sit above the allow rule they carve exceptions from, so a
// classifier that visits rules by priority must try every other rule's
// mask before it settles on this one.
const forwardPriority = 50

// forwardFlow is the rule of ManyFlows that carries the bench frame from
// the generator's port to the receiver's.
var forwardFlow = fmt.Sprintf("priority=%d,udp,in_port=%d,nw_dst=%s,tp_dst=%d,actions=output:%d",
	forwardPriority, genOFPort, rcvIP, benchDstPort, rcvOFPort)

// defaultFlow is the lowest rule of ManyFlows, so that what no other rule
// handles (ARP, the receiver's announcement) is switched as usual.
const defaultFlow = "priority=0,actions=NORMAL"

// oui starts every MAC address the flows name. It is universally
// administered, and veths' random addresses never are, so no veth's
// address matches.
const oui = "00:1b:21"

// flowFamilies each make the j-th rule of one mask (a family of rules that
// match the same fields with different values), in ovs-ofctl syntax
// without actions. None matches the bench frame, 10.253.0.1:9 ->
// 10.253.0.2:9 over UDP, untagged, from a veth's random MAC on port
// genOFPort: each differs from it in at least one field its mask covers.
// Every family makes distinct matches for j below 4,094.
var flowFamilies = []func(j int) string{
	// Destination subnets other than the bench's 10.253.0.0/24.
	func(j int) string { return fmt.Sprintf("ip,nw_dst=10.%d.%d.0/24", j/256%253, j%256) },
	// Destination sites outside 10.0.0.0/8.
	func(j int) string { return fmt.Sprintf("ip,nw_dst=%d.%d.0.0/16", 11+j/256, j%256) },
	// Blocked source hosts.
	func(j int) string { return fmt.Sprintf("ip,nw_src=172.%d.%d.%d", 16+j/65536, j/256%256, j%256) },
	// Source subnet to destination host pairs.
	func(j int) string {
		return fmt.Sprintf("ip,nw_src=192.168.%d.0/24,nw_dst=10.%d.%d.%d", j%256, 1+j/65536, j/256%256, j%256)
	},
	// Services by destination port; the bench's is 9.
	func(j int) string { return fmt.Sprintf("udp,tp_dst=%d", 1024+j) },
	// Services by source port.
	func(j int) string { return fmt.Sprintf("udp,tp_src=%d", 1024+j) },
	// Services of the bench's own receiver on other ports: these share
	// all but one field with the bench frame.
	func(j int) string { return fmt.Sprintf("udp,nw_dst=%s,tp_dst=%d", rcvIP, 1024+j) },
	// TCP services of the bench's source network.
	func(j int) string { return fmt.Sprintf("tcp,nw_src=10.253.0.0/16,tp_dst=%d", 1+j) },
	// Port ranges, as a power-of-two block each; the bench's port 9 is
	// below the first.
	func(j int) string { return fmt.Sprintf("udp,tp_dst=%#x/0xfff0", 0x10*(1+j%4095)) },
	// Known hosts by MAC.
	func(j int) string { return fmt.Sprintf("dl_src=%s:%02x:%02x:%02x", oui, j>>16&0xff, j>>8&0xff, j&0xff) },
	// Hosts by MAC on one port: the receiver's, where the bench frame does
	// not arrive.
	func(j int) string {
		return fmt.Sprintf("in_port=%d,dl_dst=%s:%02x:%02x:%02x", rcvOFPort, oui, j>>16&0xff, j>>8&0xff, j&0xff)
	},
	// VLANs; the bench frame has no tag.
	func(j int) string { return fmt.Sprintf("dl_vlan=%d,dl_type=0x0800", 1+j%4094) },
	// Differentiated services classes; the bench frame's DSCP is 0.
	func(j int) string {
		return fmt.Sprintf("ip,nw_tos=%d,nw_dst=10.%d.%d.0/24", 4*(1+j%63), j/256%253, j%256)
	},
}

// ManyFlows returns n flows (at least 2) in ovs-ofctl syntax, which both
// xswitch and ovs-ofctl add-flows read: n-2 rules over len(flowFamilies)
// masks, none of which matches the bench frame, then forwardFlow, which
// does, and defaultFlow. A table of many rules that share few masks costs
// a tuple-space classifier little; these spread over many masks with
// priorities above forwardFlow's, so that finding the bench frame's rule
// takes a probe of every mask.
func ManyFlows(n int) []string {
	flows := make([]string, 0, max(n, 2))
	for i := range n - 2 {
		family := i % len(flowFamilies)
		j := i / len(flowFamilies)
		// Priorities repeat with a period prime to the number of
		// families, so each family gets several.
		priority := 1000 + 10*family + i%7
		actions := "drop"
		if i%3 == 0 {
			actions = fmt.Sprintf("output:%d", rcvOFPort)
		}
		flows = append(flows, fmt.Sprintf("priority=%d,%s,actions=%s", priority, flowFamilies[family](j), actions))
	}
	return append(flows, forwardFlow, defaultFlow)
}

// PipelineFlows returns a pipeline of three tables in ovs-ofctl syntax,
// as OpenFlow 1.3 controllers build them: table 0 classifies by input
// port into reg0, table 1 is an ACL (telnet and one host dropped, by
// rules the bench frame does not meet), table 2 switches (NORMAL).
func PipelineFlows() []string {
	return []string{
		fmt.Sprintf("table=0,priority=10,in_port=%d,actions=load:1->NXM_NX_REG0[],goto_table:1", genOFPort),
		fmt.Sprintf("table=0,priority=10,in_port=%d,actions=load:2->NXM_NX_REG0[],goto_table:1", rcvOFPort),
		"table=1,priority=100,tcp,tp_dst=23,actions=drop",
		"table=1,priority=100,ip,nw_src=10.253.9.9,actions=drop",
		"table=1,priority=0,actions=goto_table:2",
		"table=2,priority=0,actions=NORMAL",
	}
}
