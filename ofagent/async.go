package ofagent

import (
	"slices"
	"time"

	"github.com/xswitch/xswitch/control"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/openflow"
	vswitch "github.com/xswitch/xswitch/switch"
)

// What the switch tells its controllers unasked: packet-ins, port
// status, flow removals.

// packetInBatch is how many packet-ins the pump takes from the bridge at
// a time.
const packetInBatch = 64

// pumpPacketIns sends the bridge's packet-ins to every controller whose
// role and asynchronous configuration take them, until the agent stops.
func (ba *bridgeAgent) pumpPacketIns() {
	batch := make([]vswitch.PacketIn, packetInBatch)
	for {
		select {
		case <-ba.stop:
			return
		case <-ba.br.PacketInReady():
		}
		for {
			n := ba.br.TakePacketIns(batch)
			if n == 0 {
				break
			}
			for i := range batch[:n] {
				ba.sendPacketIn(&batch[i])
			}
		}
	}
}

func (ba *bridgeAgent) sendPacketIn(p *vswitch.PacketIn) {
	// Encoded once per connection: Data is reused by the next take, and
	// each connection's message carries its own xid.
	msg := openflow.PacketIn{
		BufferID: openflow.NoBuffer, TotalLen: uint16(min(p.TotalLen, 0xffff)), Reason: p.Reason,
		TableID: p.Table, Cookie: p.Cookie, Match: packetInMatch(&p.Key), Data: p.Data,
	}
	ba.each(func(c *conn) {
		if c.wants(func(a *openflow.SetAsync) [2]uint32 { return a.PacketInMask }, p.Reason) {
			c.sendAsync(msg)
		}
	})
}

// packetInMatch is the packet-in's match: the frame's metadata fields
// (in_port, and metadata, every register, and the connection's state,
// zone, mark and label that are not zero), as OVS gives them. OVS also
// gives the connection's original tuple, which needs the frame's family
// in the match to be encoded: it is left out.
func packetInMatch(k *flow.Key) openflow.Match {
	var m flow.Match
	m.Key.InPort, m.Mask.InPort = k.InPort, 0xffff
	if k.Metadata != 0 {
		m.Key.Metadata, m.Mask.Metadata = k.Metadata, ^uint64(0)
	}
	for i, r := range k.Regs {
		if r != 0 {
			m.Key.Regs[i], m.Mask.Regs[i] = r, ^uint32(0)
		}
	}
	if ct := &k.CT; ct.State != 0 {
		m.Key.CT.State, m.Mask.CT.State = ct.State, 0xff
		if ct.Zone != 0 {
			m.Key.CT.Zone, m.Mask.CT.Zone = ct.Zone, 0xffff
		}
		if ct.Mark != 0 {
			m.Key.CT.Mark, m.Mask.CT.Mark = ct.Mark, ^uint32(0)
		}
		if ct.Label != [16]byte{} {
			m.Key.CT.Label = ct.Label
			for i := range m.Mask.CT.Label {
				m.Mask.CT.Label[i] = 0xff
			}
		}
	}
	return matchToOF(m)
}

// wants reports whether the connection's asynchronous configuration, in
// its role, takes a message for reason.
func (c *conn) wants(mask func(*openflow.SetAsync) [2]uint32, reason uint8) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := mask(&c.async)
	i := 0
	if c.role == openflow.RoleSlave {
		i = 1
	}
	return reason < 32 && m[i]&(1<<reason) != 0
}

// watchPorts tells the controllers of ports added, removed, or going up
// or down, comparing the ports every portPollInterval with what it saw
// last.
func (ba *bridgeAgent) watchPorts() {
	last, _ := ba.ports()
	tick := time.NewTicker(portPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ba.stop:
			return
		case <-tick.C:
		}
		now, err := ba.ports()
		if err != nil {
			continue
		}
		for _, st := range portChanges(last, now) {
			ba.each(func(c *conn) {
				if c.wants(func(a *openflow.SetAsync) [2]uint32 { return a.PortStatusMask }, st.Reason) {
					c.sendAsync(st)
				}
			})
		}
		last = now
	}
}

// portChanges lists what changed from before to after as PORT_STATUS
// messages: deletions, then additions and modifications, in port order.
func portChanges(before, after []openflow.Port) []openflow.PortStatus {
	byNo := func(ports []openflow.Port) map[uint32]openflow.Port {
		m := map[uint32]openflow.Port{}
		for _, p := range ports {
			m[p.PortNo] = p
		}
		return m
	}
	old, cur := byNo(before), byNo(after)
	var out []openflow.PortStatus
	for _, p := range before {
		if _, ok := cur[p.PortNo]; !ok {
			out = append(out, openflow.PortStatus{Reason: openflow.PortDelete, Desc: p})
		}
	}
	for _, p := range after {
		switch o, ok := old[p.PortNo]; {
		case !ok:
			out = append(out, openflow.PortStatus{Reason: openflow.PortAdd, Desc: p})
		case o != p:
			out = append(out, openflow.PortStatus{Reason: openflow.PortModify, Desc: p})
		}
	}
	slices.SortStableFunc(out, func(a, b openflow.PortStatus) int {
		if (a.Reason == openflow.PortDelete) != (b.Reason == openflow.PortDelete) {
			if a.Reason == openflow.PortDelete {
				return -1
			}
			return 1
		}
		return int(int64(a.Desc.PortNo) - int64(b.Desc.PortNo))
	})
	return out
}

// flowsRemoved tells the controllers of rules with send_flow_rem that
// went.
func (ba *bridgeAgent) flowsRemoved(removed []control.RemovedFlow) {
	for _, r := range removed {
		packets, bytes, _ := r.Entry.Stats()
		d := r.At.Sub(r.Entry.Installed)
		msg := openflow.FlowRemoved{
			Cookie: r.Entry.Cookie, Priority: r.Entry.Priority, Reason: uint8(r.Reason), TableID: r.Entry.Table(),
			DurationSec: uint32(d / time.Second), DurationNsec: uint32(d % time.Second),
			IdleTimeout: r.Entry.IdleTimeout, HardTimeout: r.Entry.HardTimeout,
			PacketCount: packets, ByteCount: bytes, Match: ruleMatchToOF(&r.Entry.Rule),
		}
		ba.each(func(c *conn) {
			if c.wants(func(a *openflow.SetAsync) [2]uint32 { return a.FlowRemovedMask }, msg.Reason) {
				c.sendAsync(msg)
			}
		})
	}
}

// datapathID is the bridge's, as its settings give it.
func (ba *bridgeAgent) datapathID() uint64 {
	ba.mu.Lock()
	defer ba.mu.Unlock()
	return ba.settings.DatapathID
}
