package openflow

import "encoding/binary"

// Groups: OFPT_GROUP_MOD and the buckets it shares with the GROUP_DESC
// multipart reply, and the GROUP multipart's counters.

// GroupMod is OFPT_GROUP_MOD. The codec takes any command and type: which
// of them a switch has is the switch's to say.
type GroupMod struct {
	Command   uint16
	GroupType uint8
	GroupID   uint32
	Buckets   []Bucket
}

func (GroupMod) Type() Type { return TypeGroupMod }

// The values of GroupMod.Command (OFPGC_*).
const (
	GroupCommandAdd    uint16 = 0
	GroupCommandModify uint16 = 1
	GroupCommandDelete uint16 = 2
)

// The group types (OFPGT_*), of GroupMod.GroupType and GroupDesc.GroupType,
// and the bits GroupFeatures.Types has for them.
const (
	GroupTypeAll          uint8 = 0
	GroupTypeSelect       uint8 = 1
	GroupTypeIndirect     uint8 = 2
	GroupTypeFastFailover uint8 = 3
)

// Reserved group numbers besides GroupAny (OFPG_*).
const (
	GroupMax uint32 = 0xffffff00 // the last number a group can have
	GroupAll uint32 = 0xfffffffc // every group, in a delete or a stats request
)

// The bits of GroupFeatures.Capabilities (OFPGFC_*).
const (
	GroupCapSelectWeight   uint32 = 1 << 0
	GroupCapSelectLiveness uint32 = 1 << 1
	GroupCapChaining       uint32 = 1 << 2
	GroupCapChainingChecks uint32 = 1 << 3
)

// Bucket is ofp_bucket, one of a group's buckets.
type Bucket struct {
	Weight                uint16
	WatchPort, WatchGroup uint32
	Actions               []Action
}

// GroupStatsRequest is the body of a MultipartGroup request.
type GroupStatsRequest struct {
	GroupID uint32 // GroupAll: every group
}

// GroupStats is one group of a MultipartGroup reply, with a counter for
// each of its buckets, in their order.
type GroupStats struct {
	GroupID, RefCount         uint32
	PacketCount, ByteCount    uint64
	DurationSec, DurationNsec uint32
	Buckets                   []BucketCounter
}

// BucketCounter is ofp_bucket_counter.
type BucketCounter struct{ PacketCount, ByteCount uint64 }

// GroupDesc is one group of a MultipartGroupDesc reply.
type GroupDesc struct {
	GroupType uint8
	GroupID   uint32
	Buckets   []Bucket
}

const (
	groupModLen      = 8
	bucketLen        = 16
	groupStatsLen    = 40
	bucketCounterLen = 16
	groupDescLen     = 8
	groupStatsReqLen = 8
)

func appendGroupMod(b []byte, m GroupMod) []byte {
	b = binary.BigEndian.AppendUint16(b, m.Command)
	b = append(b, m.GroupType, 0)
	b = binary.BigEndian.AppendUint32(b, m.GroupID)
	return appendBuckets(b, m.Buckets)
}

func appendBuckets(b []byte, buckets []Bucket) []byte {
	be := binary.BigEndian
	for _, k := range buckets {
		start := len(b)
		b = append(b, 0, 0)
		b = be.AppendUint16(b, k.Weight)
		b = be.AppendUint32(b, k.WatchPort)
		b = be.AppendUint32(b, k.WatchGroup)
		b = append(b, 0, 0, 0, 0)
		b = AppendActions(b, k.Actions)
		be.PutUint16(b[start:], uint16(len(b)-start))
	}
	return b
}

func decodeGroupMod(p []byte) (Message, error) {
	if err := atLeast(TypeGroupMod, p, groupModLen); err != nil {
		return nil, err
	}
	m := GroupMod{Command: binary.BigEndian.Uint16(p), GroupType: p[2], GroupID: binary.BigEndian.Uint32(p[4:])}
	var err error
	m.Buckets, err = decodeBuckets(p[groupModLen:])
	if err != nil {
		return nil, err
	}
	return m, nil
}

// decodeBuckets decodes p, a list of buckets and nothing else. A bucket
// whose length does not fit is OFPGMFC_BAD_BUCKET, as Open vSwitch has
// it; its actions' errors are theirs.
func decodeBuckets(p []byte) ([]Bucket, error) {
	be := binary.BigEndian
	var out []Bucket
	for len(p) > 0 {
		if len(p) < bucketLen {
			return nil, errorf(ErrGroupModFailed, GroupModFailedBadBucket, "buckets end with %d bytes", len(p))
		}
		n := int(be.Uint16(p))
		if n < bucketLen || n > len(p) {
			return nil, errorf(ErrGroupModFailed, GroupModFailedBadBucket, "bucket of %d bytes in %d", n, len(p))
		}
		as, err := DecodeActions(p[bucketLen:n])
		if err != nil {
			return nil, err
		}
		out = append(out, Bucket{Weight: be.Uint16(p[2:]), WatchPort: be.Uint32(p[4:]), WatchGroup: be.Uint32(p[8:]), Actions: as})
		p = p[n:]
	}
	return out, nil
}

func appendGroupStats(b []byte, g GroupStats) []byte {
	be := binary.BigEndian
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	b = be.AppendUint32(b, g.GroupID)
	b = be.AppendUint32(b, g.RefCount)
	b = append(b, 0, 0, 0, 0)
	b = be.AppendUint64(b, g.PacketCount)
	b = be.AppendUint64(b, g.ByteCount)
	b = be.AppendUint32(b, g.DurationSec)
	b = be.AppendUint32(b, g.DurationNsec)
	for _, c := range g.Buckets {
		b = be.AppendUint64(b, c.PacketCount)
		b = be.AppendUint64(b, c.ByteCount)
	}
	be.PutUint16(b[start:], uint16(len(b)-start))
	return b
}

func appendGroupDesc(b []byte, g GroupDesc) []byte {
	start := len(b)
	b = append(b, 0, 0, g.GroupType, 0)
	b = binary.BigEndian.AppendUint32(b, g.GroupID)
	b = appendBuckets(b, g.Buckets)
	binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start))
	return b
}

func decodeGroupStatsList(p []byte) ([]GroupStats, error) {
	be := binary.BigEndian
	var list []GroupStats
	for len(p) > 0 {
		q, rest, err := nextItem(p, groupStatsLen, "group stats")
		if err != nil {
			return nil, err
		}
		g := GroupStats{GroupID: be.Uint32(q[4:]), RefCount: be.Uint32(q[8:]), PacketCount: be.Uint64(q[16:]),
			ByteCount: be.Uint64(q[24:]), DurationSec: be.Uint32(q[32:]), DurationNsec: be.Uint32(q[36:])}
		if g.Buckets, err = decodeFixedList(q[groupStatsLen:], bucketCounterLen, func(c []byte) BucketCounter {
			return BucketCounter{PacketCount: be.Uint64(c), ByteCount: be.Uint64(c[8:])}
		}); err != nil {
			return nil, err
		}
		list = append(list, g)
		p = rest
	}
	return list, nil
}

func decodeGroupDescList(p []byte) ([]GroupDesc, error) {
	var list []GroupDesc
	for len(p) > 0 {
		q, rest, err := nextItem(p, groupDescLen, "group desc")
		if err != nil {
			return nil, err
		}
		g := GroupDesc{GroupType: q[2], GroupID: binary.BigEndian.Uint32(q[4:])}
		if g.Buckets, err = decodeBuckets(q[groupDescLen:]); err != nil {
			return nil, err
		}
		list = append(list, g)
		p = rest
	}
	return list, nil
}
