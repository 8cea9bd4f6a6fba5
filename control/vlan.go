package control

import (
	"fmt"
	"slices"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/port"

	vswitch "github.com/xswitch/xswitch/switch"
)

// portOptions turns pc into the bridge's port options, or says what is
// wrong with its VLAN configuration or other_config.
func portOptions(pc api.PortConfig) (vswitch.PortOptions, error) {
	mode, err := vswitch.ParseVLANMode(pc.VLANMode)
	if err != nil {
		return vswitch.PortOptions{}, fmt.Errorf("port %q: %w", pc.Name, err)
	}
	opts := vswitch.PortOptions{
		OFPort: pc.OFPort,
		VLAN:   vswitch.VLANConfig{Mode: mode, Tag: pc.Tag, Trunks: pc.Trunks},
	}
	if err := opts.VLAN.Validate(); err != nil {
		return vswitch.PortOptions{}, fmt.Errorf("port %q: %w", pc.Name, err)
	}
	if err := addPortOtherConfig(pc, &opts); err != nil {
		return vswitch.PortOptions{}, err
	}
	return opts, nil
}

// sameVLANs reports whether a and b configure the same VLANs.
func sameVLANs(a, b api.PortConfig) bool {
	return a.Tag == b.Tag && a.VLANMode == b.VLANMode && slices.Equal(a.Trunks, b.Trunks)
}

// addToBridge adds the opened port p to b as pc configures it.
func addToBridge(b *vswitch.Bridge, p port.Port, pc api.PortConfig) (uint16, error) {
	opts, err := runningOptions(pc)
	if err != nil {
		return 0, err
	}
	return b.AddPort(p, opts)
}
