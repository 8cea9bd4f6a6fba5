package control

import (
	"strings"
	"testing"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/internal/ifname"
)

func TestPortTypeTapInternal(t *testing.T) {
	for _, tc := range []struct {
		pc   api.PortConfig
		want string
	}{
		{api.PortConfig{Name: "p", Type: "vhost"}, `unknown port type "vhost" (want tap, internal, vxlan or geneve)`},
		{api.PortConfig{Name: "p", Owner: 1000}, "--owner needs --type tap"},
		{api.PortConfig{Name: "p", Type: api.PortTypeInternal, Owner: 1000}, "--owner needs --type tap"},
		{api.PortConfig{Name: "p", Type: api.PortTypeTap, Netns: "ns"}, "do not apply to a tap port"},
		{api.PortConfig{Name: "p", Type: api.PortTypeTap, Owner: -2}, "owner -2 is not a user ID"},
		{api.PortConfig{Name: "p", Type: api.PortTypeInternal, Peer: "eth1"}, "--peer does not apply"},
		{api.PortConfig{Name: "p", Address: "10.0.0.1/24"}, "--peer and --address need --netns"},
	} {
		pc := tc.pc
		if err := completePortType(&pc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.pc, err, tc.want)
		}
	}

	pc := api.PortConfig{Name: "host0", Type: api.PortTypeInternal, Address: "10.0.0.1/24", Device: "stale"}
	if err := completePortType(&pc); err != nil {
		t.Fatal(err)
	}
	if pc.Device != internalDevice("host0") || !strings.HasPrefix(pc.Device, "xi") || len(pc.Device) > ifname.MaxLen {
		t.Errorf("internal port's device %q, want %q (xi..., at most %d characters)", pc.Device, internalDevice("host0"), ifname.MaxLen)
	}
	if deviceOf(pc) != pc.Device || deviceOf(api.PortConfig{Name: "eth1"}) != "eth1" {
		t.Errorf("device() does not follow Device")
	}
	veth := api.PortConfig{Name: "v", Netns: "ns", Device: "forged"}
	if err := completePortType(&veth); err != nil || veth.Peer != "eth0" || veth.Device != "" {
		t.Errorf("veth port: %+v, %v; want peer eth0 and no device", veth, err)
	}
}
