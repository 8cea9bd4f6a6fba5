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
	live := map[string]vswitch.PortStatus{}
	for _, ps := range b.Ports() {
		live[ps.Name] = ps
	}
	var out []OpenFlowPort
	for _, bc := range d.cfg.Bridges {
		if bc.Name != bridge {
			continue
		}
		for _, pc := range bc.Ports {
			p := OpenFlowPort{Name: pc.Name, OFPort: pc.OFPort, Down: true}
			if l, ok := live[pc.Name]; ok {
				p.Down = d.opened[pc.Name].AdminDown
				if l.Info.Ifindex != 0 {
					if ifc, err := net.InterfaceByIndex(l.Info.Ifindex); err == nil {
						p.MAC = ifc.HardwareAddr
						p.SpeedMbps = uint32(min(linkSpeed(ifc.Name), math.MaxUint32))
					}
				}
			}
			out = append(out, p)
		}
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
