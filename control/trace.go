package control

import (
	"fmt"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/rstp"
	vswitch "github.com/xswitch/xswitch/switch"
)

// trace follows a packet, described in flow syntax, through a bridge's
// tables by the forwarders' own translation: every table it visits, the
// rule it meets there and what each action does, NORMAL's decision
// included. It changes nothing, not even the MAC table.
func (d *Daemon) trace(bridge, packet string) (*api.Trace, error) {
	b, err := d.bridge(bridge)
	if err != nil {
		return nil, err
	}
	bc := d.cfg.Bridge(bridge)
	f, err := parseFilter(bc, packet)
	if err != nil {
		return nil, err
	}
	key := f.Match.Key
	tr := &api.Trace{Flow: flow.FormatMatch(f.Match), Steps: []api.TraceStep{}, Outputs: []uint16{}}
	if key.DlSrc[0]&1 != 0 {
		// As the forwarder: no station has one, and learning it would
		// poison the MAC table.
		tr.Malformed = fmt.Sprintf("multicast source address %s: the datapath drops the frame as malformed and counts it in the port's rx errs", formatMAC(key.DlSrc))
		tr.FinalFlow = tr.Flow
		return tr, nil
	}
	in := key.InPort
	st, stpOn := d.rstpStatus(bridge)
	stp := traceSTP{bc: bc, ports: portStates(st)}
	switch state := stp.state(in); {
	case stpOn && key.DlDst == rstp.GroupAddress:
		tr.Dropped = "a BPDU: the spanning tree (RSTP) takes it, and it is never forwarded"
	case state == rstp.Discarding.String():
		tr.Dropped = fmt.Sprintf("port %s is discarding (RSTP): dropped before the flow table", portLabel(bc, in))
	}
	if tr.Dropped != "" {
		tr.FinalFlow = tr.Flow
		return tr, nil
	}
	tc := &tracer{b: b, bc: bc, stp: stp, tr: tr, in: in, live: map[uint16]bool{}}
	for _, p := range b.Ports() {
		tc.live[p.OFPort] = true
	}
	tc.settings, _ = bridgeSettingsOf(bc) // validated when saved
	final, dropped := b.Trace(key.Headers, tc)
	tr.FastPath = b.FastPathVerdict(key.Headers)
	if dropped {
		tr.Outputs = tr.Outputs[:0]
	}
	if len(tr.Steps) > 0 {
		tr.Rule = tr.Steps[0].Rule
	}
	tr.FinalFlow = flow.FormatMatch(exactMatch(final, f.Match.Mask))
	if state := stp.state(in); state == rstp.Learning.String() {
		tr.Dropped = fmt.Sprintf("port %s is learning (RSTP): NORMAL learns, nothing is sent", portLabel(bc, in))
		tr.Outputs = tr.Outputs[:0]
	}
	return tr, nil
}

// tracer is trace's observer of the forwarders' own translation
// (vswitch.Bridge.Trace): it writes down each lookup and action, and
// says what the actions that send the packet do, NORMAL's choice from the
// MAC table as it stands included, and which ports the forwarder would
// leave out.
type tracer struct {
	b        *vswitch.Bridge
	bc       *store.BridgeConfig
	stp      traceSTP
	settings bridgeSettings
	tr       *api.Trace
	in       uint16          // where the packet arrived: NORMAL learns it there
	live     map[uint16]bool // the ports the bridge has open
}

func (tc *tracer) Lookup(key *flow.Key, e *flow.Entry, nest int) {
	lookup := api.TraceStep{Lookup: true, Table: key.Table, Depth: nest}
	if e == nil {
		lookup.Notes = []string{fmt.Sprintf("no rule in table %d matches: the packet goes no further from here", key.Table)}
	} else {
		status := flowStatus(e, time.Now())
		lookup.Rule = &status
	}
	tc.tr.Steps = append(tc.tr.Steps, lookup)
}

func (tc *tracer) Cut(limit string) {
	last := &tc.tr.Steps[len(tc.tr.Steps)-1]
	last.Notes = append(last.Notes, limit+": the rules loop; the frame is dropped and counted as a loop drop")
}

func (tc *tracer) Step(a flow.Action, written []flow.Action, key *flow.Key, nest int, fromSet, dropped bool) {
	step := api.TraceStep{Action: flow.FormatActions([]flow.Action{a}), Table: key.Table, Depth: nest}
	if fromSet {
		step.Notes = append(step.Notes, "from the action set, as the pipeline ends")
	}
	switch a.Type {
	case flow.ActClearActions:
		step.Notes = append(step.Notes, "the action set is now empty")
	case flow.ActWriteActions:
		step.Action = flow.FormatActions(append([]flow.Action{a}, written...))
		step.Notes = append(step.Notes, "into the action set, which runs when the pipeline ends")
	case flow.ActOutput:
		if a.Port == flow.TablePort {
			step.Notes = append(step.Notes, "through the tables again, from table 0")
			break
		}
		tc.output(&step, key, a.Port)
	case flow.ActController:
		step.Notes = append(step.Notes, fmt.Sprintf("to the controller: a packet-in of the frame's first %d bytes", a.Value))
		tc.tr.Outputs = append(tc.tr.Outputs, flow.ControllerPort)
	case flow.ActInPort:
		tc.output(&step, key, key.InPort)
	case flow.ActFlood:
		ports := tc.stp.forwarding(tc.allBut(key.InPort))
		step.Notes = append(step.Notes, "to every forwarding port but the input one: "+joinPorts(ports))
		tc.output(&step, key, ports...)
	case flow.ActAll:
		ports := tc.allBut(key.InPort)
		step.Notes = append(step.Notes, "to every port but the input one: "+joinPorts(ports))
		tc.output(&step, key, ports...)
	case flow.ActNormal:
		tc.normal(&step, key)
	case flow.ActDecTTL:
		if dropped {
			step.Notes = append(step.Notes, fmt.Sprintf("TTL %d would reach 0: dropped", key.NwTTL))
		} else if key.DlType == flow.EtherTypeIPv4 || key.DlType == flow.EtherTypeIPv6 {
			step.Notes = append(step.Notes, fmt.Sprintf("TTL is now %d", key.NwTTL))
		}
	}
	tc.tr.Steps = append(tc.tr.Steps, step)
}

// output sends the packet to ports, leaving out those the forwarder
// leaves out.
func (tc *tracer) output(step *api.TraceStep, key *flow.Key, ports ...uint16) {
	for _, p := range ports {
		if p == key.InPort && step.Action != "IN_PORT" {
			step.Notes = append(step.Notes, fmt.Sprintf("port %s is the input port: not sent back", portLabel(tc.bc, p)))
			continue
		}
		if state := tc.stp.state(p); !tc.stp.forwards(p) && step.Action != "ALL" {
			step.Notes = append(step.Notes, fmt.Sprintf("port %s is %s (RSTP): not sent", portLabel(tc.bc, p), state))
			continue
		}
		if !tc.live[p] {
			step.Notes = append(step.Notes, fmt.Sprintf("the bridge has no port %d open: not sent", p))
			continue
		}
		tc.tr.Outputs = append(tc.tr.Outputs, p)
	}
}

func (tc *tracer) allBut(skip uint16) []uint16 {
	var out []uint16
	for _, pc := range tc.bc.Ports {
		if pc.OFPort != skip && tc.live[pc.OFPort] {
			out = append(out, pc.OFPort)
		}
	}
	return out
}

// normal says what NORMAL decides for the packet, from the MAC table as
// it stands, without learning.
func (tc *tracer) normal(step *api.TraceStep, key *flow.Key) {
	bc, in := tc.bc, tc.in
	var vid uint16
	if key.VLANTCI&flow.VLANCFI != 0 {
		vid = key.VLANTCI & 0xfff
	}
	vlan, carried := vlanOf(bc, in).Ingress(vid)
	switch {
	case !carried:
		step.Notes = append(step.Notes, fmt.Sprintf("port %s does not carry VLAN %d: dropped", portLabel(bc, in), vid))
	case !tc.settings.forwardBPDU && vswitch.IsReserved(key.DlDst):
		step.Notes = append(step.Notes, fmt.Sprintf("%s is a reserved group address: dropped (other_config:forward-bpdu=true forwards it)",
			formatMAC(key.DlDst)))
	case key.DlDst[0]&1 != 0:
		ports := tc.stp.forwarding(carrying(bc, vlan, tc.allBut(in)))
		step.Notes = append(step.Notes, fmt.Sprintf("multicast or broadcast destination: flooding VLAN %d to %s", vlan, joinPorts(ports)))
		step.Notes = append(step.Notes, stormNotes(bc, in)...)
		tc.output(step, key, ports...)
	default:
		if p, ok := tc.b.LookupMAC(key.DlDst, vlan); ok && vlanOf(bc, p).Carries(vlan) {
			step.Notes = append(step.Notes, fmt.Sprintf("learned that %s is on port %s in VLAN %d",
				formatMAC(key.DlDst), portLabel(bc, p), vlan))
			if p == in {
				step.Notes = append(step.Notes, fmt.Sprintf("port %s is the input port: not sent back", portLabel(bc, p)))
				return
			}
			tc.output(step, key, p)
		} else {
			ports := tc.stp.forwarding(carrying(bc, vlan, tc.allBut(in)))
			step.Notes = append(step.Notes, fmt.Sprintf("no learned port for %s in VLAN %d: flooding to %s",
				formatMAC(key.DlDst), vlan, joinPorts(ports)))
			step.Notes = append(step.Notes, stormNotes(bc, in)...)
			tc.output(step, key, ports...)
		}
	}
}

// traceSTP is what trace knows of a bridge's spanning tree.
type traceSTP struct {
	bc    *store.BridgeConfig
	ports map[string]api.RSTPPort // the ports that take part, by name
}

// state is port ofport's spanning tree state; "" when it takes no part.
func (s traceSTP) state(ofport uint16) string {
	for _, pc := range s.bc.Ports {
		if pc.OFPort == ofport {
			return s.ports[pc.Name].State
		}
	}
	return ""
}

func (s traceSTP) forwards(ofport uint16) bool {
	state := s.state(ofport)
	return state == "" || state == rstp.Forwarding.String()
}

// forwarding keeps the ports that forward.
func (s traceSTP) forwarding(ports []uint16) []uint16 {
	var out []uint16
	for _, p := range ports {
		if s.forwards(p) {
			out = append(out, p)
		}
	}
	return out
}

// stormNotes says, when NORMAL floods from port in, that its storm limit
// applies: whether this packet is dropped depends on the rate of those
// before it, which trace does not know.
func stormNotes(bc *store.BridgeConfig, in uint16) []string {
	for _, pc := range bc.Ports {
		if opts, err := portOptions(pc); err == nil && pc.OFPort == in && opts.StormLimit > 0 {
			return []string{fmt.Sprintf("port %s floods at most %d frames/s (other_config:storm-limit): beyond that, dropped",
				portLabel(bc, in), opts.StormLimit)}
		}
	}
	return nil
}

// exactMatch shows key with the fields the packet description gave plus
// those the actions rewrote, so that the final flow reads like the first.
func exactMatch(key flow.Key, given flow.Key) flow.Match {
	mask := given
	full := func(b []byte) {
		for i := range b {
			b[i] = 0xff
		}
	}
	if key.DlSrc != ([6]byte{}) {
		full(mask.DlSrc[:])
	}
	if key.DlDst != ([6]byte{}) {
		full(mask.DlDst[:])
	}
	if key.NwSrc != ([4]byte{}) {
		full(mask.NwSrc[:])
	}
	if key.NwDst != ([4]byte{}) {
		full(mask.NwDst[:])
	}
	if key.TpSrc != 0 {
		mask.TpSrc = 0xffff
	}
	if key.TpDst != 0 {
		mask.TpDst = 0xffff
	}
	if key.VLANTCI != 0 || given.VLANTCI != 0 {
		mask.VLANTCI = 0xffff
	}
	if key.NwTTL != 0 {
		mask.NwTTL = 0xff
	}
	return flow.Match{Key: key.And(&mask), Mask: mask}
}

func formatMAC(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// dumpFastPath lists the bridge's fast path entries.
func (d *Daemon) dumpFastPath(bridge string) ([]api.FastPathEntry, error) {
	b, err := d.bridge(bridge)
	if err != nil {
		return nil, err
	}
	out := []api.FastPathEntry{}
	for _, e := range b.FastPathEntries() {
		out = append(out, api.FastPathEntry{Flow: flow.FormatMatch(headersMatch(e.Headers, e.Mask)), Actions: e.Actions,
			Packets: e.Packets, Bytes: e.Bytes, UsedSec: e.Idle.Seconds(), Stale: e.Stale})
	}
	return out, nil
}

// headersMatch is the match on h's fields under mask (nil: all) that its
// frame has, for printing: the fields of headers it does not have are
// left out.
func headersMatch(h flow.Headers, under *flow.Headers) flow.Match {
	var mask flow.Key
	all := func(b []byte) {
		for i := range b {
			b[i] = 0xff
		}
	}
	mask.InPort, mask.DlType, mask.VLANTCI = 0xffff, 0xffff, 0xffff
	all(mask.DlSrc[:])
	all(mask.DlDst[:])
	if h.TunID != 0 || h.TunSrc != [4]byte{} { // from a tunnel
		mask.TunID = ^uint64(0)
		all(mask.TunSrc[:])
		all(mask.TunDst[:])
	}
	switch h.DlType {
	case flow.EtherTypeIPv4, flow.EtherTypeARP:
		all(mask.NwSrc[:])
		all(mask.NwDst[:])
		mask.NwProto = 0xff
	case flow.EtherTypeIPv6:
		all(mask.IPv6Src[:])
		all(mask.IPv6Dst[:])
		mask.NwProto = 0xff
	}
	key := flow.Key{Headers: h}
	if h.DlType == flow.EtherTypeIPv4 || h.DlType == flow.EtherTypeIPv6 {
		mask.NwTOS, mask.NwTTL, mask.NwFrag = 0xff, 0xff, flow.FragAny|flow.FragLater
		if key.HasPorts() {
			mask.TpSrc, mask.TpDst = 0xffff, 0xffff
		}
	}
	if under != nil {
		mask = mask.And(&flow.Key{Headers: *under})
	}
	return flow.Match{Key: key.And(&mask), Mask: mask}
}
