package main

import (
	"fmt"

	"github.com/xswitch/xswitch/control/api"
	vswitch "github.com/xswitch/xswitch/switch"
)

// vlanConfig is pc's VLAN configuration with its mode resolved, and false
// for a port that has none.
func vlanConfig(pc api.PortConfig) (vswitch.VLANConfig, bool) {
	if pc.VLANMode == "" && pc.Tag == 0 && len(pc.Trunks) == 0 {
		return vswitch.VLANConfig{}, false
	}
	// The daemon validated the mode: a name it does not know cannot be here.
	mode, _ := vswitch.ParseVLANMode(pc.VLANMode)
	return vswitch.VLANConfig{Mode: mode, Tag: pc.Tag, Trunks: pc.Trunks}.Resolved(), true
}

func effectiveVLANMode(pc api.PortConfig) string {
	if c, ok := vlanConfig(pc); ok {
		return c.Mode.String()
	}
	return ""
}

// vlanSummary describes a port's VLANs for show: "access 10",
// "trunk 10,20", "native-untagged 10, trunks 20,30"; "" when it has no
// VLAN configuration.
func vlanSummary(pc api.PortConfig) string {
	c, ok := vlanConfig(pc)
	if !ok {
		return ""
	}
	trunks := "all"
	if len(c.Trunks) > 0 {
		trunks = vswitch.FormatVLANs(c.Trunks)
	}
	switch c.Mode {
	case vswitch.VLANModeAccess:
		return fmt.Sprintf("access %d", c.Tag)
	case vswitch.VLANModeTrunk:
		return "trunk " + trunks
	default:
		return fmt.Sprintf("%s %d, trunks %s", c.Mode, c.Tag, trunks)
	}
}
