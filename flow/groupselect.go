package flow

import (
	"encoding/binary"
	"math"
)

// Which buckets of a group a frame takes. Liveness is OpenFlow's, judged
// as OVS judges it (ofproto-dpif-xlate's bucket_is_alive): a bucket that
// watches nothing is live; one that watches a port or a group is live
// while that port is, or while that group has a live bucket.

// maxLivenessDepth bounds how far liveness follows watched groups, as
// OVS's MAX_LIVENESS_RECURSION does: the table refuses loops through
// chains, not through watches.
const maxLivenessDepth = 32

// BucketLive reports whether bucket b is live, portLive saying whether an
// OpenFlow port is.
func (t *GroupTable) BucketLive(b *Bucket, portLive func(port uint16) bool) bool {
	return t.bucketLive(b, portLive, 0)
}

func (t *GroupTable) bucketLive(b *Bucket, portLive func(port uint16) bool, depth int) bool {
	switch {
	case depth >= maxLivenessDepth:
		return false
	case b.WatchPort == PortAny && b.WatchGroup == GroupAny:
		return true
	case b.WatchPort != PortAny && uint16(b.WatchPort) != ControllerPort && portLive(uint16(b.WatchPort)):
		return true
	case b.WatchGroup != GroupAny:
		g, ok := t.groups[b.WatchGroup]
		if !ok {
			return false
		}
		for i := range g.Buckets {
			if t.bucketLive(&g.Buckets[i], portLive, depth+1) {
				return true
			}
		}
	}
	return false
}

// SelectBucket returns the index of the bucket that a flow with key k
// takes in select group g, of those live says are live, or -1 if none is.
// The choice is the weighted rendezvous (highest random weight) of the
// flow's hash and each bucket's id, so that a flow always takes the same
// bucket, each bucket takes a share of the flows in proportion to its
// weight (a bucket of weight 0 takes none), and removing a bucket moves
// only the flows that took it.
func (g *Group) SelectBucket(k *Key, live func(i int) bool) int {
	h := g.flowHash(k)
	best, bestScore := -1, math.Inf(1)
	for i := range g.Buckets {
		b := &g.Buckets[i]
		if b.Weight == 0 || !live(i) {
			continue
		}
		// -ln(u)/w for u uniform in (0, 1) is exponential with rate w:
		// the least of them is bucket i's with probability w_i / Σw.
		u := (float64(mix64(h^uint64(b.ID)*0x9e3779b97f4a7c15)>>11) + 0.5) / (1 << 53)
		if score := -math.Log(u) / float64(b.Weight); score < bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// flowHash is the hash of k that a select group chooses by: with
// selection_method=hash, of the fields it names under their masks, from
// its selection_method_param; otherwise (the default, and dp_hash, which
// xswitch works out as the default does, once per flow) of the addresses,
// the VLAN, the EtherType, the IP protocol and the L4 ports, symmetric as
// OVS's default (flow_hash_symmetric_l4) is, so that both directions of a
// connection take the same bucket.
func (g *Group) flowHash(k *Key) uint64 {
	if g.Selection == "hash" {
		h := mix64(g.Param)
		for _, f := range g.Fields {
			v := f.Field.Get(k).And(f.Mask)
			h = mix64(h ^ v.Hi)
			h = mix64(h ^ v.Lo)
		}
		return h
	}
	var macs, ips [16]byte
	for i := range 6 {
		macs[i] = k.DlSrc[i] ^ k.DlDst[i]
	}
	for i := range 4 {
		ips[i] = k.NwSrc[i] ^ k.NwDst[i]
	}
	h := mix64(binary.BigEndian.Uint64(macs[:]) ^ uint64(k.VLANTCI&0xfff)<<48 ^ uint64(k.DlType)<<32)
	h = mix64(h ^ binary.BigEndian.Uint64(ips[:]))
	for i := 0; i < 16; i += 8 {
		h = mix64(h ^ binary.BigEndian.Uint64(k.IPv6Src[i:]) ^ binary.BigEndian.Uint64(k.IPv6Dst[i:]))
	}
	if k.DlType == EtherTypeIPv4 || k.DlType == EtherTypeIPv6 {
		h = mix64(h ^ uint64(k.NwProto)<<16 ^ uint64(k.TpSrc^k.TpDst))
	}
	return h
}

// mix64 is splitmix64's finalizer: every bit of x moves every bit of the
// result.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
