package control

import (
	"fmt"
	"time"

	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/rstp"
	vswitch "github.com/xswitch/xswitch/switch"
)

// trace follows a packet, described in flow syntax, through a bridge's
// flow table: the rule it meets and what each action does, NORMAL's
// decision included. It changes nothing, not even the MAC table.
func (d *Daemon) trace(bridge, packet string) (*Trace, error) {
	b, err := d.bridge(bridge)
	if err != nil {
		return nil, err
	}
	bc := d.cfg.bridge(bridge)
	f, err := parseFilter(bc, packet)
	if err != nil {
		return nil, err
	}
	key := f.Match.Key
	tr := &Trace{Flow: flow.FormatMatch(f.Match), Steps: []TraceStep{}, Outputs: []uint16{}}
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
	tc := &tracer{b: b, bc: bc, stp: stp, tr: tr, in: in, key: key, flows: b.Flows(), live: map[uint16]bool{}}
	for _, p := range b.Ports() {
		tc.live[p.OFPort] = true
	}
	tc.settings, _ = bc.settings() // validated when saved
	switch {
	case !tc.table(0, 0):
		tr.Outputs = tr.Outputs[:0]
	case !tc.missed:
		// The pipeline ends: the action set runs.
		dropped := false
		tc.set.Each(func(a flow.Action) {
			if dropped {
				return
			}
			step := TraceStep{Action: flow.FormatActions([]flow.Action{a}), Notes: []string{"from the action set, as the pipeline ends"}}
			dropped = !tc.action(&step, a)
			tc.tr.Steps = append(tc.tr.Steps, step)
		})
		if dropped {
			tr.Outputs = tr.Outputs[:0]
		}
	}
	if len(tr.Steps) > 0 {
		tr.Rule = tr.Steps[0].Rule
	}
	tr.FinalFlow = flow.FormatMatch(exactMatch(tc.key, f.Match.Mask))
	if state := stp.state(in); state == rstp.Learning.String() {
		tr.Dropped = fmt.Sprintf("port %s is learning (RSTP): NORMAL learns, nothing is sent", portLabel(bc, in))
		tr.Outputs = tr.Outputs[:0]
	}
	return tr, nil
}

// tracer follows one packet through the tables as the forwarder does
// (switch/actions.go): the same limits, the same key changes
// (flow.Action.ApplyToKey), the same ports left out.
type tracer struct {
	b         *vswitch.Bridge
	bc        *BridgeConfig
	stp       traceSTP
	settings  bridgeSettings
	flows     *flow.Table
	tr        *Trace
	in        uint16 // where the packet arrived: NORMAL learns it there
	key       flow.Key
	live      map[uint16]bool // the ports the bridge has open
	resubmits int
	// set is the action set, as the forwarder's translator keeps it
	// (switch/decision.go): run at the end unless a table miss outside a
	// resubmit ended the pipeline.
	set        flow.ActionSet
	inResubmit int
	missed     bool
}

// table looks the packet up in the table its key names and follows the
// rule it meets; false means the packet is dropped. depth counts the
// tables on the way, as the forwarder's limit does; nest counts only the
// resubmits, which trace indents, as ovs-appctl ofproto/trace does.
func (tc *tracer) table(depth, nest int) bool {
	if depth > vswitch.MaxPipelineDepth {
		tc.loop(fmt.Sprintf("deeper than %d tables: the rules loop; the frame is dropped and counted as a loop drop", vswitch.MaxPipelineDepth))
		return false
	}
	lookup := TraceStep{Lookup: true, Table: tc.key.Table, Depth: nest}
	e := tc.flows.Lookup(&tc.key)
	if e == nil {
		tc.missed = tc.missed || tc.inResubmit == 0
		lookup.Notes = []string{fmt.Sprintf("no rule in table %d matches: the packet goes no further from here", tc.key.Table)}
		tc.tr.Steps = append(tc.tr.Steps, lookup)
		return true
	}
	status := flowStatus(e, time.Now())
	lookup.Rule = &status
	tc.tr.Steps = append(tc.tr.Steps, lookup)
	return tc.actions(e.Actions, depth, nest)
}

func (tc *tracer) loop(note string) {
	last := &tc.tr.Steps[len(tc.tr.Steps)-1]
	last.Notes = append(last.Notes, note)
}

func (tc *tracer) actions(actions []flow.Action, depth, nest int) bool {
	for i := 0; i < len(actions); i++ {
		a := actions[i]
		step := TraceStep{Action: flow.FormatActions([]flow.Action{a}), Table: tc.key.Table, Depth: nest}
		switch a.Type {
		case flow.ActGotoTable, flow.ActResubmit:
			tc.tr.Steps = append(tc.tr.Steps, step)
			if a.Type == flow.ActGotoTable {
				tc.key.Table = a.Table
				return tc.table(depth+1, nest)
			}
			if tc.resubmits++; tc.resubmits > vswitch.MaxResubmits {
				tc.loop(fmt.Sprintf("more than %d resubmits: the rules loop; the frame is dropped and counted as a loop drop", vswitch.MaxResubmits))
				return false
			}
			table, inPort := tc.key.Table, tc.key.InPort
			if a.Table != flow.ThisTable {
				tc.key.Table = a.Table
			}
			if a.Port != 0 {
				tc.key.InPort = a.Port
			}
			tc.inResubmit++
			keep := tc.table(depth+1, nest+1)
			tc.inResubmit--
			tc.key.Table, tc.key.InPort = table, inPort
			if !keep {
				return false
			}
			continue
		case flow.ActClearActions:
			tc.set.Clear()
			step.Notes = append(step.Notes, "the action set is now empty")
		case flow.ActWriteActions:
			written, next := flow.WrittenActions(actions, i)
			step.Action = flow.FormatActions(actions[i:next])
			step.Notes = append(step.Notes, "into the action set, which runs when the pipeline ends")
			tc.set.Write(written)
			i = next - 1
		default:
			if !tc.action(&step, a) {
				tc.tr.Steps = append(tc.tr.Steps, step)
				return false
			}
		}
		tc.tr.Steps = append(tc.tr.Steps, step)
	}
	return true
}

// action follows one action that acts on the packet, or on its key
// alone; false when it drops the packet.
func (tc *tracer) action(step *TraceStep, a flow.Action) bool {
	switch a.Type {
	case flow.ActOutput:
		tc.output(step, a.Port)
	case flow.ActInPort:
		tc.output(step, tc.key.InPort)
	case flow.ActFlood:
		ports := tc.stp.forwarding(tc.allBut(tc.key.InPort))
		step.Notes = append(step.Notes, "to every forwarding port but the input one: "+joinPorts(ports))
		tc.output(step, ports...)
	case flow.ActAll:
		ports := tc.allBut(tc.key.InPort)
		step.Notes = append(step.Notes, "to every port but the input one: "+joinPorts(ports))
		tc.output(step, ports...)
	case flow.ActNormal:
		tc.normal(step)
	default:
		return tc.rewrite(step, a)
	}
	return true
}

// output sends the packet to ports, leaving out those the forwarder
// leaves out.
func (tc *tracer) output(step *TraceStep, ports ...uint16) {
	for _, p := range ports {
		if p == tc.key.InPort && step.Action != "IN_PORT" {
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
func (tc *tracer) normal(step *TraceStep) {
	key, bc, in := &tc.key, tc.bc, tc.in
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
		tc.output(step, ports...)
	default:
		if p, ok := tc.b.LookupMAC(key.DlDst, vlan); ok && vlanOf(bc, p).Carries(vlan) {
			step.Notes = append(step.Notes, fmt.Sprintf("learned that %s is on port %s in VLAN %d",
				formatMAC(key.DlDst), portLabel(bc, p), vlan))
			if p == in {
				step.Notes = append(step.Notes, fmt.Sprintf("port %s is the input port: not sent back", portLabel(bc, p)))
				return
			}
			tc.output(step, p)
		} else {
			ports := tc.stp.forwarding(carrying(bc, vlan, tc.allBut(in)))
			step.Notes = append(step.Notes, fmt.Sprintf("no learned port for %s in VLAN %d: flooding to %s",
				formatMAC(key.DlDst), vlan, joinPorts(ports)))
			step.Notes = append(step.Notes, stormNotes(bc, in)...)
			tc.output(step, ports...)
		}
	}
}

// rewrite applies a rewrite or a pipeline action to the packet's key, as
// the forwarder does to the frame, and says what it did; false when it
// drops the packet.
func (tc *tracer) rewrite(step *TraceStep, a flow.Action) bool {
	ttl := tc.key.NwTTL
	if !a.ApplyToKey(&tc.key) {
		step.Notes = append(step.Notes, fmt.Sprintf("TTL %d would reach 0: dropped", ttl))
		return false
	}
	if a.Type == flow.ActDecTTL && tc.key.NwTTL != ttl {
		step.Notes = append(step.Notes, fmt.Sprintf("TTL is now %d", tc.key.NwTTL))
	}
	return true
}

// traceSTP is what trace knows of a bridge's spanning tree.
type traceSTP struct {
	bc    *BridgeConfig
	ports map[string]RSTPPort // the ports that take part, by name
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
func stormNotes(bc *BridgeConfig, in uint16) []string {
	for _, pc := range bc.Ports {
		if opts, err := pc.portOptions(); err == nil && pc.OFPort == in && opts.StormLimit > 0 {
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
