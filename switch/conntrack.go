package vswitch

import (
	"errors"
	"fmt"

	"github.com/xswitch/xswitch/flow"
)

// ErrNoConntrack is the error of actions that send a frame through the
// connection tracker, or forget what it said (ct(), ct_clear), which the
// switch does not run yet: errors.Is finds it.
var ErrNoConntrack = errors.New("ct() and ct_clear are not supported yet: the switch has no connection tracker")

// CheckConntrack refuses actions with ct() or ct_clear, in write_actions
// too: rules, groups and packet-outs that have them are refused before
// they reach a forwarder, rather than forward as if they were not there.
// It goes once the datapath tracks connections.
func CheckConntrack(actions []flow.Action) error {
	for _, a := range actions {
		if a.Type == flow.ActCT || a.Type == flow.ActCTClear {
			return fmt.Errorf("%s: %w", flow.FormatActions([]flow.Action{a}), ErrNoConntrack)
		}
	}
	return nil
}
