package bpf

import "testing"

func TestMaxQueuesMatchesXsksMap(t *testing.T) {
	spec, err := LoadXsk()
	if err != nil {
		t.Fatalf("load the generated collection spec: %v", err)
	}
	m, ok := spec.Maps["xsks_map"]
	if !ok {
		t.Fatal("xsks_map missing from the generated object")
	}
	if m.MaxEntries != MaxQueues {
		t.Fatalf("xsks_map has %d entries, MaxQueues is %d: update one to match the other", m.MaxEntries, MaxQueues)
	}
}
