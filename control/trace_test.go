package control

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/xswitch/xswitch/control/api"
	"github.com/xswitch/xswitch/flow"
)

// TestExactMatchOfAnMPLSKey: trace's final flow of a frame a push made
// MPLS shows its label stack entry, not the fields of the packet under
// it, which no match can name.
func TestExactMatchOfAnMPLSKey(t *testing.T) {
	r, err := flow.ParseRule("in_port=1,ip,nw_dst=10.0.0.2,actions=push_mpls:0x8847,set_mpls_label:5", nil)
	if err != nil {
		t.Fatal(err)
	}
	key := r.Match.Key
	key.NwSrc, key.NwTTL = [4]byte{10, 0, 0, 1}, 9
	for _, a := range r.Actions {
		a.ApplyToKey(&key)
	}
	m := exactMatch(key, r.Match.Mask)
	if got, want := flow.FormatMatch(m), "mpls,in_port=1,mpls_label=5,mpls_tc=0,mpls_ttl=9,mpls_bos=1"; got != want {
		t.Errorf("final flow %q, want %q", got, want)
	}
	if _, err := flow.ParseRule(flow.FormatMatch(m)+",actions=drop", nil); err != nil {
		t.Errorf("the final flow does not parse: %v", err)
	}
}

// TestTraceFollowsRecirculations: the daemon's trace takes --ct-next's
// states, says a bad one is bad, and its final flow shows the state the
// last recirculation was followed in.
func TestTraceFollowsRecirculations(t *testing.T) {
	d := quietDaemon(t, filepath.Join(t.TempDir(), "conf.json"))
	defer d.Close()
	for _, req := range []api.Request{
		{Verb: api.VerbAddBridge, Bridge: "br0"},
		{Verb: api.VerbAddFlows, Bridge: "br0", Flows: []string{"in_port=2,ip,actions=ct(zone=3,table=1)", "table=1,ct_state=+trk+est,actions=drop"}},
	} {
		if resp := d.Handle(req); resp.Error != "" {
			t.Fatal(resp.Error)
		}
	}
	tr, err := d.trace("br0", "in_port=2,udp,nw_src=10.0.0.2,nw_dst=10.0.0.1", []string{"trk,est"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "ct_state=est|trk,ct_zone=3"; !strings.Contains(tr.FinalFlow, want) {
		t.Errorf("final flow %q, without %q", tr.FinalFlow, want)
	}
	if _, err := d.trace("br0", "in_port=2,udp", []string{"trk,bogus"}); err == nil || !strings.Contains(err.Error(), "--ct-next") {
		t.Errorf("a bad --ct-next: %v, want an error naming it", err)
	}
}
