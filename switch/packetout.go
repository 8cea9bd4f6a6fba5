package vswitch

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/header"
	"github.com/xswitch/xswitch/port"
)

// Packet-outs and fail-open: what the OpenFlow agent asks of the bridge
// besides its tables.

// noSlot is the input slot of a packet-out's frame that came from no
// port (in_port CONTROLLER or LOCAL without such a port).
const noSlot = math.MaxUint16

// trunkOfAll is how NORMAL takes a frame that came from no port: as on a
// trunk of every VLAN, as OVS does.
var trunkOfAll = compileVLAN(VLANConfig{})

// PacketOut runs actions on frame as if it came in on inPort
// (flow.ControllerPort, i.e. OFPP_CONTROLLER, or LOCAL when it came from
// no port; a port number otherwise, which output:IN_PORT then uses), on a
// forwarder between batches (the TX rings are the forwarders');
// output to flow.TablePort (OFPP_TABLE) runs the frame through the
// pipeline from table 0. It returns once the frame is sent or dropped,
// with an error for an unknown port or an action a packet-out may not
// have: the instructions, and what a rule could not have either.
func (b *Bridge) PacketOut(inPort uint16, actions []flow.Action, frame []byte) error {
	if len(frame) < header.EthernetLen || len(frame) > maxCopyFrame {
		return fmt.Errorf("packet-out: a frame of %d bytes (want %d to %d)", len(frame), header.EthernetLen, maxCopyFrame)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fwds == nil {
		return fmt.Errorf("bridge %s is closed", b.name)
	}
	if inPort != flow.ControllerPort && inPort != flow.LocalPort && !b.hasOFPort(inPort) {
		return fmt.Errorf("packet-out: bridge %s has no port %d", b.name, inPort)
	}
	if err := CheckGroups(b.name, b.Flows().Groups(), actions); err != nil {
		return fmt.Errorf("packet-out: %w", err)
	}
	if err := b.checkPacketOut(actions); err != nil {
		return fmt.Errorf("packet-out: %w", err)
	}
	f := b.fwds[0]
	var err error
	f.do(func() { err = f.packetOut(inPort, actions, frame) })
	return err
}

func (b *Bridge) hasOFPort(ofport uint16) bool {
	for _, q := range b.ports {
		if q.ofport == ofport {
			return true
		}
	}
	return false
}

// checkPacketOut refuses what a packet-out's actions may not have.
func (b *Bridge) checkPacketOut(actions []flow.Action) error {
	for _, a := range actions {
		if a.Type == 0 || a.Type > flow.ActController && a.Type != flow.ActMeter {
			return fmt.Errorf("unknown action type %d", a.Type)
		}
		switch a.Type {
		case flow.ActOutput:
			if a.Port != flow.TablePort && !b.hasOFPort(a.Port) {
				return fmt.Errorf("output to port %d, which bridge %s does not have", a.Port, b.name)
			}
		case flow.ActGotoTable, flow.ActWriteActions, flow.ActClearActions, flow.ActWriteMetadata, flow.ActMeter:
			return fmt.Errorf("%s is an instruction, and a packet-out has only actions", instructionNames[a.Type])
		case flow.ActLoad, flow.ActSetField, flow.ActMove:
			if a.Field == nil || a.Type == flow.ActMove && a.Src == nil {
				return errors.New("a load, set_field or move without its field")
			}
		}
	}
	return nil
}

var instructionNames = map[flow.ActionType]string{flow.ActGotoTable: "goto_table", flow.ActWriteActions: "write_actions",
	flow.ActClearActions: "clear_actions", flow.ActWriteMetadata: "write_metadata", flow.ActMeter: "meter"}

// packetOut runs a packet-out on the forwarder: its actions are worked
// out as a rule's would be, and run on a copy of the frame, which leaves
// before packetOut returns.
func (f *forwarder) packetOut(inPort uint16, actions []flow.Action, frame []byte) error {
	if !f.extractor.Extract(frame, inPort, &f.key) {
		return errors.New("packet-out: the frame's headers are malformed")
	}
	wall := time.Now()
	now := int64(wall.Sub(f.epoch))
	d := &f.packetOutDecision
	table := f.flows.Load()
	f.decisions.tr.translateActions(table, &f.key.Headers, actions, d, now)
	inSlot, ok := f.slot(inPort)
	if !ok {
		inSlot = noSlot
	}
	f.learnOnly = false
	f.copies.reset()
	r := &f.run
	*r = frameRun{inSlot: inSlot, table: table, frame: f.copies.clone(frame), layout: f.extractor.Layout(), now: now,
		dropped: d.dropped, copied: true, controllers: d.controllers, cts: d.cts, tunnel: port.TunnelTx{ID: uint32(f.key.TunID), Hash: datapath.FlowHash(&f.key.Headers)}}
	f.execute(r, d.actions)
	if !r.sent {
		f.drops.count(r.dropped)
	}
	r.frame, r.controllers = nil, nil
	f.count(d, len(frame))
	f.flushCounts(wall)
	// The bridge's drops, not a port's: the frame was received on none.
	// NORMAL's, counted per input port only, go uncounted.
	f.drops.flush(f.bridgeDrops, nil)
	f.transmitGroups()
	f.copies.reset()
	f.notifyPacketIns()
	return nil
}

// SetFailOpen makes the bridge forward every frame as NORMAL whatever its
// tables say (on) or by its tables again (off): Open vSwitch's fail-open,
// which the agent turns on in fail mode standalone while no controller is
// connected. The decisions cached, and the fast path's entries, made
// before the change are forgotten.
func (b *Bridge) SetFailOpen(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.onEachForwarder(func(f *forwarder) { f.setFailOpen(on) })
}

func (f *forwarder) setFailOpen(on bool) {
	if f.failOpen != on {
		f.failOpen = on
		f.forgetDecisions()
	}
}
