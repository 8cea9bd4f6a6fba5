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
	e := b.Flows().Lookup(&key)
	if e == nil {
		tr.FinalFlow = tr.Flow
		return tr, nil
	}
	status := flowStatus(e, time.Now())
	tr.Rule = &status
	settings, _ := bc.settings() // validated when saved

	output := func(step *TraceStep, ports ...uint16) {
		for _, p := range ports {
			if p == in && step.Action != "IN_PORT" {
				step.Notes = append(step.Notes, fmt.Sprintf("port %s is the input port: not sent back", portLabel(bc, p)))
				continue
			}
			if state := stp.state(p); !stp.forwards(p) && step.Action != "ALL" {
				step.Notes = append(step.Notes, fmt.Sprintf("port %s is %s (RSTP): not sent", portLabel(bc, p), state))
				continue
			}
			tr.Outputs = append(tr.Outputs, p)
		}
	}
	allBut := func(skip uint16) []uint16 {
		var out []uint16
		for _, pc := range bc.Ports {
			if pc.OFPort != skip {
				out = append(out, pc.OFPort)
			}
		}
		return out
	}
	for _, a := range e.Actions {
		step := TraceStep{Action: flow.FormatActions([]flow.Action{a})}
		switch a.Type {
		case flow.ActOutput:
			output(&step, a.Port)
		case flow.ActInPort:
			output(&step, in)
		case flow.ActFlood:
			ports := stp.forwarding(allBut(in))
			step.Notes = append(step.Notes, "to every forwarding port but the input one: "+joinPorts(ports))
			output(&step, ports...)
		case flow.ActAll:
			ports := allBut(in)
			step.Notes = append(step.Notes, "to every port but the input one: "+joinPorts(ports))
			output(&step, ports...)
		case flow.ActNormal:
			var vid uint16
			if key.VLANTCI&flow.VLANCFI != 0 {
				vid = key.VLANTCI & 0xfff
			}
			vlan, carried := vlanOf(bc, in).Ingress(vid)
			switch {
			case !carried:
				step.Notes = append(step.Notes, fmt.Sprintf("port %s does not carry VLAN %d: dropped", portLabel(bc, in), vid))
			case !settings.forwardBPDU && vswitch.IsReserved(key.DlDst):
				step.Notes = append(step.Notes, fmt.Sprintf("%s is a reserved group address: dropped (other_config:forward-bpdu=true forwards it)",
					formatMAC(key.DlDst)))
			case key.DlDst[0]&1 != 0:
				ports := stp.forwarding(carrying(bc, vlan, allBut(in)))
				step.Notes = append(step.Notes, fmt.Sprintf("multicast or broadcast destination: flooding VLAN %d to %s", vlan, joinPorts(ports)))
				step.Notes = append(step.Notes, stormNotes(bc, in)...)
				output(&step, ports...)
			default:
				if p, ok := b.LookupMAC(key.DlDst, vlan); ok && vlanOf(bc, p).Carries(vlan) {
					step.Notes = append(step.Notes, fmt.Sprintf("learned that %s is on port %s in VLAN %d",
						formatMAC(key.DlDst), portLabel(bc, p), vlan))
					output(&step, p)
				} else {
					ports := stp.forwarding(carrying(bc, vlan, allBut(in)))
					step.Notes = append(step.Notes, fmt.Sprintf("no learned port for %s in VLAN %d: flooding to %s",
						formatMAC(key.DlDst), vlan, joinPorts(ports)))
					step.Notes = append(step.Notes, stormNotes(bc, in)...)
					output(&step, ports...)
				}
			}
		default:
			if note, keep := traceRewrite(&key, a); !keep {
				step.Notes = append(step.Notes, note)
				tr.Steps = append(tr.Steps, step)
				tr.Outputs = tr.Outputs[:0]
				tr.FinalFlow = flow.FormatMatch(exactMatch(key, f.Match.Mask))
				return tr, nil
			} else if note != "" {
				step.Notes = append(step.Notes, note)
			}
		}
		tr.Steps = append(tr.Steps, step)
	}
	tr.FinalFlow = flow.FormatMatch(exactMatch(key, f.Match.Mask))
	if state := stp.state(in); state == rstp.Learning.String() {
		tr.Dropped = fmt.Sprintf("port %s is learning (RSTP): NORMAL learns, nothing is sent", portLabel(bc, in))
		tr.Outputs = tr.Outputs[:0]
	}
	return tr, nil
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

// traceRewrite applies a rewrite to the packet's key, as the forwarder
// applies it to the frame, and says what it did. keep is false when the
// action drops the packet.
func traceRewrite(k *flow.Key, a flow.Action) (note string, keep bool) {
	switch a.Type {
	case flow.ActSetDlSrc:
		k.DlSrc = a.MAC
	case flow.ActSetDlDst:
		k.DlDst = a.MAC
	case flow.ActSetNwSrc:
		k.NwSrc = a.IPv4
	case flow.ActSetNwDst:
		k.NwDst = a.IPv4
	case flow.ActSetTpSrc:
		k.TpSrc = a.Value
	case flow.ActSetTpDst:
		k.TpDst = a.Value
	case flow.ActSetVLANVID:
		k.VLANTCI = k.VLANTCI&0xe000 | flow.VLANCFI | a.Value
	case flow.ActPushVLAN:
		k.VLANTCI |= flow.VLANCFI
	case flow.ActStripVLAN:
		k.VLANTCI = 0
	case flow.ActDecTTL:
		if k.DlType != flow.EtherTypeIPv4 && k.DlType != flow.EtherTypeIPv6 {
			return "", true
		}
		if k.NwTTL <= 1 {
			return fmt.Sprintf("TTL %d would reach 0: dropped", k.NwTTL), false
		}
		k.NwTTL--
		return fmt.Sprintf("TTL is now %d", k.NwTTL), true
	}
	return "", true
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
