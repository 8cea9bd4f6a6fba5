package control

import (
	"fmt"

	"github.com/xswitch/xswitch/control/api"
)

// MTUs, as OVS's Interface mtu_request: add-port --mtu sets the MTU of
// the interfaces it creates (both ends of a veth pair, a tap), and veth
// and tap check its range; an existing interface keeps the MTU its owner
// gave it. Either way the interface's MTU is what the port must carry:
// afxdp.Open refuses one it cannot in the modes that insist, and in auto
// mode the daemon warns, in its log and in show (afxdp.MTUProblem).

// checkMTURequest refuses --mtu for an interface add-port does not create.
func checkMTURequest(pc api.PortConfig) error {
	if pc.MTU != 0 && !ownsDevice(pc) {
		return fmt.Errorf("--mtu sets the MTU of the interfaces add-port creates (--netns, --type tap or internal); for the existing interface %q set it with ip link, and the port carries what it says", pc.Name)
	}
	return nil
}
