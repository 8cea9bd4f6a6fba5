package control

import (
	"fmt"
	"math"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/flow"
)

// trace follows a packet, described in flow syntax, through a bridge as
// its forwarders would (vswitch.Bridge.Trace): every table it visits, the
// rule it meets there and what each action does, NORMAL's choice
// included, and the recirculations of ct(table=N) with the states
// ctNext gives. It changes nothing, not even the MAC table.
func (d *Daemon) trace(bridge, packet string, ctNext []string) (*api.Trace, error) {
	b, err := d.bridge(bridge)
	if err != nil {
		return nil, err
	}
	f, err := parseFilter(d.cfg.Bridge(bridge), packet)
	if err != nil {
		return nil, err
	}
	states := make([]uint8, len(ctNext))
	for i, text := range ctNext {
		if states[i], err = flow.ParseCTState(text); err != nil {
			return nil, fmt.Errorf("--ct-next %q: %w", text, err)
		}
	}
	res := b.Trace(f.Match.Key.Headers, states...)
	tr := &api.Trace{Flow: flow.FormatMatch(f.Match), Steps: []api.TraceStep{}, Outputs: res.Outputs,
		Malformed: res.Malformed, Dropped: res.Dropped, FastPath: res.FastPath}
	now := time.Now()
	for _, s := range res.Steps {
		step := api.TraceStep{Action: s.Action, Lookup: s.Lookup, Table: s.Table, Depth: s.Depth, Notes: s.Notes}
		if s.Rule != nil {
			status := flowStatus(s.Rule, now)
			step.Rule = &status
		}
		tr.Steps = append(tr.Steps, step)
	}
	if len(tr.Steps) > 0 {
		tr.Rule = tr.Steps[0].Rule
	}
	tr.FinalFlow = flow.FormatMatch(exactMatch(res.Final, f.Match.Mask))
	if res.Malformed != "" || res.Dropped != "" && len(tr.Steps) == 0 {
		tr.FinalFlow = tr.Flow
	}
	return tr, nil
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
	if key.CT.State != 0 {
		// A recirculation's: the state trace followed it in.
		mask.CT.State, mask.CT.Zone = 0xff, 0xffff
	}
	if key.IsMPLS() {
		// The frame's network fields are under its label stack, where no
		// match reads them: the stack's top entry shows instead.
		h := mask.Headers
		mask.Headers = flow.Headers{TunID: h.TunID, TunSrc: h.TunSrc, TunDst: h.TunDst, InPort: h.InPort,
			DlDst: h.DlDst, DlSrc: h.DlSrc, DlType: math.MaxUint16, VLANTCI: h.VLANTCI}
		mask.MPLS = math.MaxUint32
	}
	return flow.Match{Key: key.And(&mask), Mask: mask}
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

func formatMAC(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}
