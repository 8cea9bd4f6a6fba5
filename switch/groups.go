package vswitch

import (
	"errors"
	"fmt"

	"github.com/xswitch/xswitch/flow"
)

// ErrNoGroup is the error of actions that send to a group the bridge does
// not have (OpenFlow's OFPBAC_BAD_OUT_GROUP): errors.Is finds it.
var ErrNoGroup = errors.New("no such group")

// CheckGroups refuses actions that send to a group the bridge does not
// have. A bridge has no group table yet, so every group is missing: the
// rules and packet-outs that name one are refused before they reach a
// forwarder, which could not run them.
func (b *Bridge) CheckGroups(actions []flow.Action) error {
	for _, a := range actions {
		if a.Type == flow.ActGroup {
			return fmt.Errorf("group %d on bridge %s: %w", a.Group, b.name, ErrNoGroup)
		}
	}
	return nil
}
