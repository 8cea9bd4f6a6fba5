package control

import (
	"testing"

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
