package tunnel

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/xswitch/xswitch/port"
)

// wirePort is an underlay's port that only counts its closes.
type wirePort struct {
	name   string
	closes int
}

func (p *wirePort) Name() string                 { return p.name }
func (p *wirePort) RxQueues() []port.RxQueue     { return nil }
func (p *wirePort) Transmit(frames [][]byte) int { return len(frames) }
func (p *wirePort) Info() port.Info              { return port.Info{Kind: "wire"} }
func (p *wirePort) Stats() port.Stats            { return port.Stats{} }
func (p *wirePort) Close() error                 { p.closes++; return nil }

// vxlanTo is a VXLAN tunnel to 192.0.2.last.
func vxlanTo(name string, last byte) Config {
	return Config{Name: name, Kind: VXLAN, Remote: netip.AddrFrom4([4]byte{192, 0, 2, last})}
}

// The tunnel ports over an interface share one underlay, opened with the
// first and closed with the last, once; a set forgets it then, and opens
// a new one for the next port.
func TestUnderlayLivesAsLongAsItsTunnels(t *testing.T) {
	var set Underlays
	var closed []string
	set.Closed = func(ifname string) { closed = append(closed, ifname) }
	var wires []*wirePort
	open := func() (*Underlay, error) {
		w := &wirePort{name: "eth1"}
		wires = append(wires, w)
		return NewUnderlay(w, 1500), nil
	}
	a, err := set.NewPort(vxlanTo("a", 2), "eth1", open)
	if err != nil {
		t.Fatal(err)
	}
	b, err := set.NewPort(vxlanTo("b", 3), "eth1", open)
	if err != nil {
		t.Fatal(err)
	}
	if len(wires) != 1 || a.Underlay() != b.Underlay() || set.On("eth1") != a.Underlay() {
		t.Fatalf("two tunnels over eth1 opened %d underlays; want one, shared and found by its interface", len(wires))
	}
	if _, err := set.NewPort(Config{Name: "bad", Kind: VXLAN}, "eth1", open); err == nil || len(wires) != 1 {
		t.Fatalf("a tunnel without a remote: %v, %d underlays opened; want it refused and none opened", err, len(wires))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if wires[0].closes != 0 || set.On("eth1") == nil {
		t.Fatalf("after the first of two tunnels closed, the underlay's port was closed %d times and set.On says %v; want it open",
			wires[0].closes, set.On("eth1"))
	}
	a.Close() // a second close lets go of nothing more
	if wires[0].closes != 0 {
		t.Fatalf("closing a tunnel twice closed its underlay")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if wires[0].closes != 1 || set.On("eth1") != nil || len(set.Interfaces()) != 0 || !slices.Equal(closed, []string{"eth1"}) {
		t.Fatalf("after the last tunnel closed: the underlay's port closed %d times, set has %v, Closed told %v; want once, none, [eth1]",
			wires[0].closes, set.Interfaces(), closed)
	}
	c, err := set.NewPort(vxlanTo("c", 4), "eth1", open)
	if err != nil {
		t.Fatal(err)
	}
	if len(wires) != 2 || c.Underlay().(*Underlay).Port != wires[1] {
		t.Fatalf("a tunnel after the underlay closed did not open a new one")
	}
	c.Close()
}

// An underlay that cannot be opened leaves nothing behind.
func TestUnderlayThatCannotOpen(t *testing.T) {
	var set Underlays
	refused := errors.New("no such interface")
	if _, err := set.NewPort(vxlanTo("a", 2), "eth1", func() (*Underlay, error) { return nil, refused }); !errors.Is(err, refused) {
		t.Fatalf("NewPort: %v, want %v", err, refused)
	}
	if set.On("eth1") != nil {
		t.Fatal("an underlay that failed to open is in the set")
	}
}

// An underlay made alone closes with the last port made over it.
func TestUnderlayWithoutASet(t *testing.T) {
	w := &wirePort{name: "eth1"}
	u := NewUnderlay(w, 1500)
	a, err := NewPort(vxlanTo("a", 2), u)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewPort(vxlanTo("b", 3), u)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if w.closes != 0 {
		t.Fatal("the underlay closed with the first of its two tunnels")
	}
	b.Close()
	if w.closes != 1 {
		t.Fatalf("the underlay's port closed %d times after its last tunnel did, want once", w.closes)
	}
}
