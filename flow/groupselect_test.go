package flow

import (
	"math"
	"testing"
)

// udpKey is the key of a UDP flow from source port sport.
func udpKey(sport uint16) Key {
	var k Key
	k.DlType, k.NwProto = EtherTypeIPv4, ProtoUDP
	k.NwSrc, k.NwDst = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	k.TpSrc, k.TpDst = sport, 53
	return k
}

func allLive(int) bool { return true }

// Flows spread over a select group's buckets as their weights say, by a
// chi-square test, and each flow takes one bucket every time.
func TestSelectBucketFollowsWeights(t *testing.T) {
	g := group(t, "group_id=1,type=select,bucket=weight:1,output:1,bucket=weight:3,output:2,bucket=weight:0,output:3,bucket=weight:6,output:4")
	const flows = 20000
	counts := make([]int, len(g.Buckets))
	for i := range flows {
		k := udpKey(uint16(i))
		b := g.SelectBucket(&k, allLive)
		if again := g.SelectBucket(&k, allLive); again != b {
			t.Fatalf("flow %d took bucket %d, then %d", i, b, again)
		}
		counts[b]++
	}
	if counts[2] != 0 {
		t.Errorf("the bucket of weight 0 took %d flows", counts[2])
	}
	chi2 := 0.0
	for i, w := range []float64{1, 3, 0, 6} {
		if w == 0 {
			continue
		}
		expected := flows * w / 10
		chi2 += math.Pow(float64(counts[i])-expected, 2) / expected
	}
	// Two degrees of freedom: 13.82 at p = 0.001.
	if chi2 > 13.82 {
		t.Errorf("flows per bucket %v for weights 1, 3, 0, 6: chi-square %.2f > 13.82", counts, chi2)
	}
}

// A bucket that is not live, or removed, moves only the flows it had.
func TestSelectBucketMovesOnlyTheLostBucketsFlows(t *testing.T) {
	g := group(t, "group_id=1,type=select,bucket=output:1,bucket=output:2,bucket=output:3,bucket=output:4")
	smaller := g
	smaller.Buckets = g.Buckets[:3]
	for i := range 5000 {
		k := udpKey(uint16(i))
		before := g.SelectBucket(&k, allLive)
		dead := g.SelectBucket(&k, func(i int) bool { return i != 1 })
		removed := smaller.SelectBucket(&k, allLive)
		if before != 1 && dead != before {
			t.Fatalf("flow %d moved from bucket %d to %d when bucket 1 died", i, before, dead)
		}
		if before != 3 && removed != before {
			t.Fatalf("flow %d moved from bucket %d to %d when bucket 3 was removed", i, before, removed)
		}
		if dead == 1 || removed == 3 {
			t.Fatalf("flow %d still takes a bucket that is gone", i)
		}
	}
	if b := g.SelectBucket(&Key{}, func(int) bool { return false }); b != -1 {
		t.Errorf("with no live bucket the choice is %d, want -1", b)
	}
}

// The default hash is symmetric: both directions of a connection take
// one bucket. selection_method=hash reads only the fields it names.
func TestSelectHashes(t *testing.T) {
	g := group(t, "group_id=1,type=select,bucket=output:1,bucket=output:2,bucket=output:3,bucket=output:4")
	byDst := group(t, "group_id=2,type=select,selection_method=hash,fields(ip_dst),bucket=output:1,bucket=output:2,bucket=output:3,bucket=output:4")
	for i := range 2000 {
		k := udpKey(uint16(i))
		k.DlSrc, k.DlDst = [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}
		r := k
		r.DlSrc, r.DlDst, r.NwSrc, r.NwDst, r.TpSrc, r.TpDst = k.DlDst, k.DlSrc, k.NwDst, k.NwSrc, k.TpDst, k.TpSrc
		if a, b := g.SelectBucket(&k, allLive), g.SelectBucket(&r, allLive); a != b {
			t.Fatalf("flow %d takes bucket %d one way and %d the other", i, a, b)
		}
		first := udpKey(0)
		if a, b := byDst.SelectBucket(&k, allLive), byDst.SelectBucket(&first, allLive); a != b {
			t.Fatalf("fields(ip_dst): flows to one address took buckets %d and %d", a, b)
		}
	}
}

// A fast failover bucket is live as its watched port, or its watched
// group, is; one that watches nothing always is.
func TestBucketLiveness(t *testing.T) {
	t1, err := NewGroupTable().Add(group(t, "group_id=5,type=ff,bucket=watch_port:3,output:3"), now)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := t1.Add(group(t, "group_id=6,type=ff,bucket=watch_port:1,output:1,bucket=watch_group:5,output:2,bucket=output:4"), now)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := t2.Get(6)
	for _, c := range []struct {
		up   map[uint16]bool
		want [3]bool
	}{
		{map[uint16]bool{1: true, 3: true}, [3]bool{true, true, true}},
		{map[uint16]bool{3: true}, [3]bool{false, true, true}},
		{map[uint16]bool{}, [3]bool{false, false, true}},
	} {
		for i := range g.Buckets {
			if got := t2.BucketLive(&g.Buckets[i], func(p uint16) bool { return c.up[p] }); got != c.want[i] {
				t.Errorf("ports up %v: bucket %d live %v, want %v", c.up, i, got, c.want[i])
			}
		}
	}
}
