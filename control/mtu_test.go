package control

import (
	"strings"
	"testing"

	"github.com/xswitch/xswitch/control/api"
)

func TestMTURequestIsForCreatedInterfaces(t *testing.T) {
	err := checkMTURequest(api.PortConfig{Name: "eth1", MTU: 9000})
	if err == nil || !strings.Contains(err.Error(), `existing interface "eth1"`) {
		t.Errorf("--mtu on an existing interface: %v, want a refusal naming it", err)
	}
	for _, pc := range []api.PortConfig{
		{Name: "eth1"},
		{Name: "v1", Netns: "ns1", MTU: 9000},
		{Name: "t1", Type: api.PortTypeTap, MTU: 9000},
		{Name: "h1", Type: api.PortTypeInternal, MTU: 9000},
	} {
		if err := checkMTURequest(pc); err != nil {
			t.Errorf("%+v: %v", pc, err)
		}
	}
	// Both ends of a veth pair get it, an internal port's included.
	for _, pc := range []api.PortConfig{
		{Name: "v1", Netns: "ns1", Peer: "eth0", MTU: 9000},
		{Name: "h1", Type: api.PortTypeInternal, Device: internalDevice("h1"), MTU: 9000},
	} {
		if c := vethConfig(pc); c.MTU != 9000 {
			t.Errorf("vethConfig(%+v).MTU = %d, want 9000", pc, c.MTU)
		}
	}
}
