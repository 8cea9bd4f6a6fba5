package control

import (
	"fmt"
	"slices"
	"time"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/control/store"
	"github.com/xswitch/xswitch/flow"
	vswitch "github.com/xswitch/xswitch/switch"
)

// OpenFlow port numbers, allocated as Open vSwitch's alloc_ofp_port does
// (ofproto.c): a configured port keeps its number while its interface is
// gone, and a deleted port's number is kept from other ports for an hour,
// so that rules still naming it (in_port=9,actions=drop) do not silently
// apply to the next port added; a port added again under its old name gets
// its old number back.

// ofportQuarantine is how long a released number goes only to the port it
// was released by.
const ofportQuarantine = time.Hour

// allocOFPort picks the number of a new port named name on bc, which wants
// requested (0: any). A requested number must be free; otherwise the port
// gets its own old number if it had one lately and it is free, else the
// lowest number that no configured port holds (one whose interface is
// gone included) and no port released within the quarantine, else, with
// every number taken or quarantined, the one released longest ago. The
// port named like the bridge is LOCAL (65534).
func allocOFPort(bc *store.BridgeConfig, name string, requested uint16, now time.Time) (uint16, error) {
	held := make(map[uint16]string, len(bc.Ports))
	for _, pc := range bc.Ports {
		held[pc.OFPort] = pc.Name
	}
	if name == bc.Name {
		// As in OVS, the port named like its bridge is the bridge's own:
		// OpenFlow's LOCAL.
		if requested != 0 && requested != flow.LocalPort {
			return 0, fmt.Errorf("port %s is named like its bridge, so it is LOCAL (ofport %d): it cannot have ofport %d", name, flow.LocalPort, requested)
		}
		return flow.LocalPort, nil
	}
	if requested != 0 {
		if requested > vswitch.MaxOFPort {
			return 0, fmt.Errorf("ofport %d out of range 1-%d", requested, vswitch.MaxOFPort)
		}
		if owner, ok := held[requested]; ok {
			return 0, fmt.Errorf("ofport %d is already used by port %q on bridge %s", requested, owner, bc.Name)
		}
		return requested, nil
	}
	quarantined := map[uint16]bool{}
	for _, r := range bc.Released {
		if now.Sub(r.Time) >= ofportQuarantine {
			continue
		}
		if _, taken := held[r.OFPort]; r.Name == name && !taken {
			return r.OFPort, nil
		}
		quarantined[r.OFPort] = true
	}
	for n := uint16(1); n <= vswitch.MaxOFPort; n++ {
		if _, taken := held[n]; !taken && !quarantined[n] {
			return n, nil
		}
	}
	var oldest *store.ReleasedPort
	for i, r := range bc.Released {
		if _, taken := held[r.OFPort]; !taken && (oldest == nil || r.Time.Before(oldest.Time)) {
			oldest = &bc.Released[i]
		}
	}
	if oldest == nil {
		return 0, fmt.Errorf("bridge %s has no free OpenFlow port number", bc.Name)
	}
	return oldest.OFPort, nil
}

// releaseOFPort records that pc's number is free from now, and forgets
// the numbers whose quarantine is over.
func releaseOFPort(bc *store.BridgeConfig, pc api.PortConfig, now time.Time) {
	bc.Released = slices.DeleteFunc(bc.Released, func(r store.ReleasedPort) bool {
		return now.Sub(r.Time) >= ofportQuarantine || r.Name == pc.Name || r.OFPort == pc.OFPort
	})
	bc.Released = append(bc.Released, store.ReleasedPort{Name: pc.Name, OFPort: pc.OFPort, Time: now})
}
