package vswitch

import (
	"bytes"
	"testing"

	"github.com/xswitch/xswitch/internal/ovsdummy"
)

// sameAsOVS is the differential test against Open vSwitch itself (its
// dummy datapath, run by the test): the same rules over the same number
// of ports, the same frames in on port 1, one at a time, and each port
// must send the same frames, byte for byte, in the same order. It
// returns how many frames OVS sent from each port (index 0 is port 1).
func sameAsOVS(t *testing.T, flows []string, ports int, frames [][]byte) []int {
	t.Helper()
	ovs := ovsdummy.Start(t, ports)
	ovs.AddFlows(t, flows...)
	ours := newPorts(ports)
	f := testForwarder(t, 64, ours...)
	f.flows.Publish(rules(t, flows...))
	for _, fr := range frames {
		ovs.Receive(t, 1, fr)
		ours[0].Inject(bytes.Clone(fr))
		forwardAll(f)
	}
	sent := make([]int, ports)
	for i := range ours {
		theirs, mine := ovs.Sent(t, i+1), ours[i].Transmitted()
		sent[i] = len(theirs)
		for j := range max(len(mine), len(theirs)) {
			switch {
			case j >= len(mine):
				t.Errorf("port %d: OVS sent %x, xswitch nothing", i+1, theirs[j])
			case j >= len(theirs):
				t.Errorf("port %d: xswitch sent %x, OVS nothing", i+1, mine[j])
			case !bytes.Equal(mine[j], theirs[j]):
				t.Errorf("port %d, frame %d: xswitch sent\n%x\nOVS\n%x", i+1, j, mine[j], theirs[j])
			}
		}
	}
	return sent
}
