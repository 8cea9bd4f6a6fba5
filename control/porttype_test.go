package control

import (
	"strings"
	"testing"

	"github.com/xswitch/xswitch/internal/ifname"
)

func TestPortTypeTapInternal(t *testing.T) {
	for _, tc := range []struct {
		pc   PortConfig
		want string
	}{
		{PortConfig{Name: "p", Type: "vhost"}, `unknown port type "vhost" (want tap, internal, vxlan or geneve)`},
		{PortConfig{Name: "p", Owner: 1000}, "--owner needs --type tap"},
		{PortConfig{Name: "p", Type: PortTypeInternal, Owner: 1000}, "--owner needs --type tap"},
		{PortConfig{Name: "p", Type: PortTypeTap, Netns: "ns"}, "do not apply to a tap port"},
		{PortConfig{Name: "p", Type: PortTypeTap, Owner: -2}, "owner -2 is not a user ID"},
		{PortConfig{Name: "p", Type: PortTypeInternal, Peer: "eth1"}, "--peer does not apply"},
		{PortConfig{Name: "p", Address: "10.0.0.1/24"}, "--peer and --address need --netns"},
	} {
		pc := tc.pc
		if err := completePortType(&pc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.pc, err, tc.want)
		}
	}

	pc := PortConfig{Name: "host0", Type: PortTypeInternal, Address: "10.0.0.1/24", Device: "stale"}
	if err := completePortType(&pc); err != nil {
		t.Fatal(err)
	}
	if pc.Device != internalDevice("host0") || !strings.HasPrefix(pc.Device, "xi") || len(pc.Device) > ifname.MaxLen {
		t.Errorf("internal port's device %q, want %q (xi..., at most %d characters)", pc.Device, internalDevice("host0"), ifname.MaxLen)
	}
	if pc.device() != pc.Device || (PortConfig{Name: "eth1"}).device() != "eth1" {
		t.Errorf("device() does not follow Device")
	}
	veth := PortConfig{Name: "v", Netns: "ns", Device: "forged"}
	if err := completePortType(&veth); err != nil || veth.Peer != "eth0" || veth.Device != "" {
		t.Errorf("veth port: %+v, %v; want peer eth0 and no device", veth, err)
	}
}
