package vswitch

import (
	"fmt"
	"strings"

	"github.com/xswitch/xswitch/conntrack"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/rstp"
)

// Trace: a packet's way through the bridge as its first forwarding
// thread would take it, told step by step. It runs that thread's own
// translation, NORMAL included, against the thread's view of the ports,
// the MAC table and the spanning tree, and says which ports each output
// reaches by the rules execution follows: there is no second copy of
// either to disagree with forwarding. It learns and counts nothing.

// TraceResult is what Trace found.
type TraceResult struct {
	Steps []TraceStep
	// Outputs are the OpenFlow ports the packet leaves by
	// (flow.ControllerPort for a packet-in); empty: it goes nowhere.
	Outputs []uint16
	Final   flow.Key // the key as the pipeline left it
	// Malformed says why the datapath drops the packet before any rule
	// sees it.
	Malformed string
	// Dropped says why the packet went nowhere when the rules are not
	// the reason: the spanning tree took it, or its input port does not
	// forward.
	Dropped string
	// FastPath is FastPathVerdict's answer for the packet.
	FastPath string
}

// TraceStep is one step of the way: a lookup in a table (Lookup set; Rule
// is what it met, nil for a miss) or one action of the rule met last at
// that depth, with what the switch says of it. Depth counts the resubmits
// and the group buckets that led there.
type TraceStep struct {
	Lookup bool
	Rule   *flow.Entry
	Action string
	Table  uint8
	Depth  int
	Notes  []string
}

// Trace follows a packet with headers h through the bridge. A ct(table=N)
// sends a copy on to table N with the connection's state, which is the
// tracker's, frame by frame: the trace follows each such recirculation in
// turn with the next of ctNext for ct_state, or +trk+new when there is
// none left, as ovs-appctl ofproto/trace --ct-next does.
func (b *Bridge) Trace(h flow.Headers, ctNext ...uint8) TraceResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.fwds) == 0 {
		return TraceResult{Final: flow.Key{Headers: h}, Dropped: "the bridge is closed"}
	}
	f := b.fwds[0]
	var res TraceResult
	f.do(func() {
		res = f.trace(h, ctNext)
		res.FastPath = f.fastPathVerdict(h)
	})
	return res
}

func (f *forwarder) trace(h flow.Headers, ctNext []uint8) TraceResult {
	t := &tracer{v: &f.view, meters: f.meters, now: f.now(), res: TraceResult{Steps: []TraceStep{}, Outputs: []uint16{}}}
	if isMulticast(h.DlSrc[:]) {
		// As receive: no station has one, and learning it would poison
		// the MAC table.
		t.res.Malformed = fmt.Sprintf("multicast source address %s: the datapath drops the frame as malformed and counts it in the port's rx errs",
			macString(h.DlSrc))
		t.res.Final = flow.Key{Headers: h}
		return t.res
	}
	if slot, ok := f.slot(h.InPort); ok {
		switch {
		case f.bpdus != nil && h.DlDst == rstp.GroupAddress:
			t.res.Dropped = "a BPDU: the spanning tree (RSTP) takes it, and it is never forwarded"
		case f.stp[slot] == stpDiscarding:
			t.res.Dropped = fmt.Sprintf("port %s is discarding (RSTP): dropped before the flow table", t.v.label(h.InPort))
		}
	}
	if t.res.Dropped != "" {
		t.res.Final = flow.Key{Headers: h}
		return t.res
	}
	tr := translator{in: xlateIn{view: &f.view, obs: t, meters: f.meters}}
	var d decision
	table := f.flows.Load()
	tr.translate(table, &h, &d, t.now)
	t.res.Final = tr.key
	if d.dropped == dropLoop || d.dropped.stopsActions() {
		t.res.Outputs = t.res.Outputs[:0]
	}
	t.recirculations(&tr, table, d.cts, ctNext)
	if slot, ok := f.slot(h.InPort); ok && f.stp[slot] == stpLearning {
		t.res.Dropped = fmt.Sprintf("port %s is learning (RSTP): NORMAL learns, nothing is sent", t.v.label(h.InPort))
		t.res.Outputs = t.res.Outputs[:0]
	}
	return t.res
}

// recirculations traces where the ct(table=N)s of cts send their copies,
// in the order they come, and where theirs send theirs, up to the
// datapath's limit.
func (t *tracer) recirculations(tr *translator, table *flow.Table, cts []ctStep, ctNext []uint8) {
	var pending []ctStep
	for n := 0; n < maxRecirculations; n++ {
		for _, step := range cts {
			if step.resume != nil {
				pending = append(pending, step)
			}
		}
		if len(pending) == 0 {
			return
		}
		rec, zone := pending[0].resume, pending[0].action.Zone
		pending = pending[1:]
		state, how := uint8(flow.CTTracked|flow.CTNew), "as a new connection's first packet (trace --ct-next FLAGS to follow another state)"
		if n < len(ctNext) {
			state, how = ctNext[n], "as --ct-next says"
		}
		key := rec.key
		key.CT = flow.CTFields{State: state, Zone: zone}
		t.res.Steps = append(t.res.Steps, TraceStep{Action: "recirc", Table: key.Table, Notes: []string{
			fmt.Sprintf("the copy ct() sent on resumes in table %d with ct_state=%s ct_zone=%d, %s", key.Table,
				conntrack.State(state), zone, how)}})
		var d decision
		tr.translateRecirculation(table, rec, &key, &d, t.now)
		t.res.Final = tr.key
		cts = d.cts
	}
}

// tracer is trace's observer of the translation: it writes each lookup
// and action down, with where the actions that send the packet send it,
// by the view's ports as execution reads them.
type tracer struct {
	v      *view
	meters *meterBank
	now    int64 // the forwarders' clock as the trace runs
	res    TraceResult
}

func (t *tracer) lookup(key *flow.Key, e *flow.Entry, nest int) {
	step := TraceStep{Lookup: true, Table: key.Table, Depth: nest, Rule: e}
	if e == nil {
		step.Notes = []string{fmt.Sprintf("no rule in table %d matches: the packet goes no further from here", key.Table)}
	}
	t.res.Steps = append(t.res.Steps, step)
}

func (t *tracer) cut(limit string) {
	last := &t.res.Steps[len(t.res.Steps)-1]
	last.Notes = append(last.Notes, limit+": the rules loop; the frame is dropped and counted as a loop drop")
}

func (t *tracer) group(a flow.Action, key *flow.Key, nest int, fromSet bool, how string) {
	step := TraceStep{Action: flow.FormatActions([]flow.Action{a}), Table: key.Table, Depth: nest, Notes: []string{how}}
	if fromSet {
		step.Notes = append([]string{"from the action set, as the pipeline ends"}, step.Notes...)
	}
	t.res.Steps = append(t.res.Steps, step)
}

func (t *tracer) step(a flow.Action, written []flow.Action, key *flow.Key, nest int, fromSet, dropped bool, normal *normalChoice) {
	step := TraceStep{Action: flow.FormatActions([]flow.Action{a}), Table: key.Table, Depth: nest}
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
		t.output(&step, key, a.Type, a.Port)
	case flow.ActController:
		step.Notes = append(step.Notes, fmt.Sprintf("to the controller: a packet-in of the frame's first %d bytes", a.Value))
		t.res.Outputs = append(t.res.Outputs, flow.ControllerPort)
	case flow.ActInPort:
		t.output(&step, key, a.Type, key.InPort)
	case flow.ActFlood:
		ports := t.v.ofportsOf(t.v.flood, key.InPort)
		step.Notes = append(step.Notes, "to every forwarding port but the input one: "+joinPorts(ports))
		t.output(&step, key, a.Type, ports...)
	case flow.ActAll:
		ports := t.v.ofportsOf(t.v.live, key.InPort)
		step.Notes = append(step.Notes, "to every port but the input one: "+joinPorts(ports))
		t.output(&step, key, a.Type, ports...)
	case flow.ActNormal:
		t.normal(&step, key, normal)
	case flow.ActDecTTL:
		if dropped {
			step.Notes = append(step.Notes, fmt.Sprintf("TTL %d would reach 0: dropped", key.NwTTL))
		} else if key.DlType == flow.EtherTypeIPv4 || key.DlType == flow.EtherTypeIPv6 {
			step.Notes = append(step.Notes, fmt.Sprintf("TTL is now %d", key.NwTTL))
		}
	case flow.ActDecMPLSTTL, flow.ActCopyTTLOut:
		switch {
		case dropped && !key.IsMPLS():
			step.Notes = append(step.Notes, "not an MPLS frame: dropped, counted as a ttl drop, as OVS stops it")
		case dropped:
			step.Notes = append(step.Notes, fmt.Sprintf("MPLS TTL %d would reach 0: dropped", key.MPLS&header.MPLSTTLMask))
		case key.IsMPLS():
			step.Notes = append(step.Notes, fmt.Sprintf("MPLS TTL is now %d", key.MPLS&header.MPLSTTLMask))
		}
	case flow.ActMeter:
		step.Notes = append(step.Notes, t.meter(a.Meter))
	case flow.ActCT:
		step.Notes = append(step.Notes, ctNote(a.CT, key))
	case flow.ActCTClear:
		step.Notes = append(step.Notes, "the frame is untracked: its connection's fields are zero")
	case flow.ActCopyTTLIn:
		switch {
		case !key.IsMPLS():
		case key.MPLS&header.MPLSBOSMask == 0:
			step.Notes = append(step.Notes, fmt.Sprintf("the next label's TTL is now %d", key.MPLSEntry(1)&header.MPLSTTLMask))
		case key.UnderMPLS != 0:
			step.Notes = append(step.Notes, fmt.Sprintf("the TTL of the IP packet under the label stack is now %d", key.NwTTL))
		}
	case flow.ActPushMPLS, flow.ActPopMPLS:
		if dropped {
			step.Notes = append(step.Notes, fmt.Sprintf("the label stack is deeper than the %d entries the key holds: dropped, as OVS drops it",
				flow.MaxMPLSLabels))
		}
	}
	t.res.Steps = append(t.res.Steps, step)
}

// ctNote says what a ct() does with the frame whose key is key.
func ctNote(c *flow.Conntrack, key *flow.Key) string {
	note := fmt.Sprintf("through the connection tracker in zone %d", ctZone(c, key))
	if c.Commit {
		note += ", which commits its connection"
	}
	if c.Table != flow.CTNoTable {
		note += fmt.Sprintf("; a copy goes on in table %d with the connection's fields (recirc, below)", c.Table)
	}
	return note + "; the frame goes on untracked"
}

// meter says what meter id is and what it would do with a frame of the
// packet's now: a meter judges each frame as it comes, by the budget its
// bands have left, in user space and the fast path alike.
func (t *tracer) meter(id uint32) string {
	cfg, applied := t.meters.peek(t.meters.slot(id), id, t.now)
	if cfg == nil {
		return fmt.Sprintf("the bridge has no meter %d: nothing is metered", id)
	}
	unit := "kbps"
	if cfg.pktps {
		unit = "pktps"
	}
	bands := make([]string, len(cfg.bands))
	for i, b := range cfg.bands {
		bands[i] = fmt.Sprintf("%s above %d %s", b.typ, b.rate, unit)
	}
	verdict := "a frame now is within every band's rate: it goes on as it is"
	if applied >= 0 {
		b := &cfg.bands[applied]
		verdict = fmt.Sprintf("a frame now exceeds %d %s: ", b.rate, unit)
		if b.typ == flow.BandDrop {
			verdict += "dropped"
		} else {
			verdict += fmt.Sprintf("its DSCP's drop precedence raised by %d", b.precLevel)
		}
	}
	return fmt.Sprintf("meter %d (%s), judging each frame as it comes; %s", id, strings.Join(bands, ", "), verdict)
}

// output sends the packet to ports as execution would, saying which it
// leaves out and why.
func (t *tracer) output(step *TraceStep, key *flow.Key, kind flow.ActionType, ports ...uint16) {
	for _, p := range ports {
		if p == key.InPort && kind != flow.ActInPort {
			step.Notes = append(step.Notes, fmt.Sprintf("port %s is the input port: not sent back", t.v.label(p)))
			continue
		}
		slot, ok := t.v.slot(p)
		if !ok {
			step.Notes = append(step.Notes, fmt.Sprintf("the bridge has no port %d open: not sent", p))
			continue
		}
		if !t.v.forwards(slot) && kind != flow.ActAll {
			step.Notes = append(step.Notes, fmt.Sprintf("port %s is %s (RSTP): not sent", t.v.label(p), t.v.stpState(slot)))
			continue
		}
		t.res.Outputs = append(t.res.Outputs, p)
	}
}

// normal says what NORMAL chose for the packet, from the MAC table as it
// stands, and where that sends it.
func (t *tracer) normal(step *TraceStep, key *flow.Key, c *normalChoice) {
	v := t.v
	if c.inSlot == noSlot {
		step.Notes = append(step.Notes, "NORMAL runs per frame here, as it comes")
		return
	}
	in := v.ports[c.inSlot].ofport
	dst := macString(key.DlDst)
	switch c.drop {
	case normalDropVLAN:
		var vid uint16
		if key.VLANTCI&flow.VLANCFI != 0 {
			vid = key.VLANTCI & header.VLANVIDMask
		}
		step.Notes = append(step.Notes, fmt.Sprintf("port %s does not carry VLAN %d: dropped", v.label(in), vid))
		return
	case normalDropReserved:
		step.Notes = append(step.Notes, fmt.Sprintf("%s is a reserved group address: dropped (other_config:forward-bpdu=true forwards it)", dst))
		return
	}
	if c.unlearned {
		step.Notes = append(step.Notes, fmt.Sprintf("%s is not learned on port %s yet: NORMAL learns it there first", macString(key.DlSrc), v.label(in)))
	}
	if c.flood {
		var ports []uint16
		for _, out := range v.flood {
			if v.floodsTo(c.inSlot, out, c.vlan) {
				ports = append(ports, v.ports[out].ofport)
			}
		}
		if isMulticast(key.DlDst[:]) {
			step.Notes = append(step.Notes, fmt.Sprintf("multicast or broadcast destination: flooding VLAN %d to %s", c.vlan, joinPorts(ports)))
		} else {
			step.Notes = append(step.Notes, fmt.Sprintf("no learned port for %s in VLAN %d: flooding to %s", dst, c.vlan, joinPorts(ports)))
		}
		if limit := v.stormLimit[c.inSlot]; limit > 0 {
			step.Notes = append(step.Notes, fmt.Sprintf("port %s floods at most %d frames/s (other_config:storm-limit): beyond that, dropped",
				v.label(in), limit))
		}
		t.output(step, key, flow.ActNormal, ports...)
		return
	}
	to := v.ports[c.to].ofport
	step.Notes = append(step.Notes, fmt.Sprintf("learned that %s is on port %s in VLAN %d", dst, v.label(to), c.vlan))
	switch {
	case c.drop == normalToInput:
		step.Notes = append(step.Notes, fmt.Sprintf("port %s is the input port: not sent back", v.label(to)))
	case c.drop == normalDropSplitHorizon:
		step.Notes = append(step.Notes, fmt.Sprintf("port %s is a tunnel, as the input port is: not sent (split horizon)", v.label(to)))
	case !v.ports[c.to].vlan.carries(c.vlan):
		step.Notes = append(step.Notes, fmt.Sprintf("port %s does not carry VLAN %d: not sent", v.label(to), c.vlan))
	default:
		t.output(step, key, flow.ActNormal, to)
	}
}

// label names OpenFlow port ofport for trace: "2 (p2)".
func (v *view) label(ofport uint16) string {
	if slot, ok := v.slot(ofport); ok {
		return fmt.Sprintf("%d (%s)", ofport, v.ports[slot].Name())
	}
	return fmt.Sprint(ofport)
}

// ofportsOf are the OpenFlow port numbers of slots, but skip's.
func (v *view) ofportsOf(slots []uint16, skip uint16) []uint16 {
	var out []uint16
	for _, s := range slots {
		if p := v.ports[s].ofport; p != skip {
			out = append(out, p)
		}
	}
	return out
}

// stpState names slot's spanning tree state as rstp-show does.
func (v *view) stpState(slot uint16) string {
	switch v.stp[slot] {
	case stpLearning:
		return rstp.Learning.String()
	case stpDiscarding:
		return rstp.Discarding.String()
	}
	return rstp.Forwarding.String()
}

func joinPorts(ports []uint16) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ",")
}

// macString writes a MAC address as OVS does.
func macString(mac [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5])
}
