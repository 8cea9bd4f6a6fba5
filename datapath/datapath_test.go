package datapath_test

import (
	"maps"
	"testing"

	"github.com/xswitch/xswitch/datapath"
	"github.com/xswitch/xswitch/datapath/datapathtest"
	"github.com/xswitch/xswitch/flow"
	"github.com/xswitch/xswitch/internal/testenv"
)

// walked is an entry of a datapath: its key, and in which table.
type walked struct {
	key datapath.Key
	l2  bool
}

// walk is what dp holds, with what each entry carried.
func walk(t *testing.T, dp datapath.Datapath) map[walked]datapath.Counts {
	t.Helper()
	out := map[walked]datapath.Counts{}
	if err := dp.Walk(func(k datapath.Key, l2 bool, c datapath.Counts) { out[walked{k, l2}] = c }); err != nil {
		t.Fatal(err)
	}
	return out
}

// The fake the policy's tests use keeps what the kernel's maps keep: the
// same calls leave the same entries in both, an l2 entry under its
// Ethernet fields alone.
func TestFakeKeepsWhatTheKernelKeeps(t *testing.T) {
	testenv.RequireRoot(t)
	kernel, err := datapath.NewKernel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kernel.Close() })
	fake := datapathtest.New()
	h := func(last byte) flow.Headers {
		return flow.Headers{InPort: 1, DlSrc: [6]byte{2, 0, 0, 0, 0, last}, DlDst: [6]byte{2, 0, 0, 0, 0, 9},
			DlType: flow.EtherTypeIPv4, NwProto: flow.ProtoUDP, NwSrc: [4]byte{10, 0, 0, last}, TpSrc: 7}
	}
	keys := make([]datapath.Key, 4)
	entries := make([]datapath.Entry, 4)
	for i := range keys {
		hi := h(byte(i + 1))
		keys[i] = datapath.NewKey(&hi, nil, 3)
		entries[i] = datapath.Entry{Out: uint32(i)}
	}
	for _, dp := range []datapath.Datapath{kernel, fake} {
		if err := dp.Publish(3, nil, false); err != nil {
			t.Fatal(err)
		}
		if n, err := dp.Install(false, keys[:3], entries[:3]); n != 3 {
			t.Fatal(n, err)
		}
		if n, err := dp.Install(true, keys[3:], entries[3:]); n != 1 {
			t.Fatal(n, err)
		}
		if _, err := dp.Remove(false, keys[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := dp.Remove(false, keys[0]); err == nil {
			t.Error("removing a key twice succeeded")
		}
		dp.Delete(false, keys[1:2])
		dp.Delete(false, keys[:1]) // gone already: skipped
	}
	want, got := walk(t, kernel), walk(t, fake)
	if !maps.Equal(want, got) {
		t.Errorf("the fake holds %v; the kernel %v", got, want)
	}
	if len(want) != 2 {
		t.Errorf("the kernel holds %d entries; want 2", len(want))
	}
	l2 := keys[3].L2()
	if _, ok := want[walked{l2.Key(), true}]; !ok {
		t.Error("the l2 entry is not under its Ethernet fields alone")
	}
}
