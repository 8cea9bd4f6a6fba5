package control

import (
	"math"
	"net"

	vswitch "github.com/xswitch/xswitch/switch"
)

// What the OpenFlow agent (package ofagent) reads of a bridge, besides
// the verbs it shares with the CLI.

// Bridge returns the named bridge, whose methods the agent calls for what
// crosses the wire frame by frame (packet-ins, packet-outs) and for its
// tables' counters.
func (d *Daemon) Bridge(name string) (*vswitch.Bridge, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bridge(name)
}

// OpenFlowPort is a port as an OpenFlow controller is told of it
// (ofp_port).
type OpenFlowPort struct {
	Name   string
	OFPort uint16
	MAC    net.HardwareAddr // nil when unknown
	// Down says the port forwards nothing: it could not be opened, or its
	// interface is administratively down.
	Down      bool
	SpeedMbps uint32 // 0 when unknown
}

// OpenFlowPorts lists the bridge's configured ports in OpenFlow port
// order.
func (d *Daemon) OpenFlowPorts(bridge string) ([]OpenFlowPort, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.bridge(bridge)
	if err != nil {
		return nil, err
	}
	var out []OpenFlowPort
	for _, cp := range d.configuredPorts(b, d.cfg.Bridge(bridge)) {
		p := OpenFlowPort{Name: cp.Name, OFPort: cp.OFPort, Down: !cp.open || d.opened[cp.Name].AdminDown}
		if cp.open && cp.status.Info.Ifindex != 0 {
			if ifc, err := net.InterfaceByIndex(cp.status.Info.Ifindex); err == nil {
				p.MAC = ifc.HardwareAddr
				p.SpeedMbps = uint32(min(linkSpeed(ifc.Name), math.MaxUint32))
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// PortCounters are one port's counters: what it counts now, if it is
// open, and what it counted before its interface (or underlay) last went
// away.
type PortCounters struct {
	Name   string
	OFPort uint16
	Stats  vswitch.PortStats
}

// PortStats are the counters of every configured port of the bridge, in
// OpenFlow port order, those that are down included.
func (d *Daemon) PortStats(bridge string) ([]PortCounters, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.bridge(bridge)
	if err != nil {
		return nil, err
	}
	b.SyncFastPath() // so that the counters include what the kernel carried
	var out []PortCounters
	for _, cp := range d.configuredPorts(b, d.cfg.Bridge(bridge)) {
		out = append(out, PortCounters{Name: cp.Name, OFPort: cp.OFPort, Stats: cp.counts})
	}
	return out, nil
}
