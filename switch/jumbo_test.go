package vswitch

import (
	"bytes"
	"testing"

	"github.com/xswitch/xswitch/internal/race"
	"github.com/xswitch/xswitch/port/porttest"
)

// jumboFrames returns n broadcast frames from src, each 9018 bytes (MTU
// 9000 and a VLAN tag's worth more would still fit a port's 9234) with
// bytes that name it, so that a copy mixed up with another shows.
func jumboFrames(n int, src []byte) [][]byte {
	var frames [][]byte
	for i := range n {
		payload := make([]byte, 9018-14)
		for j := range payload {
			payload[j] = byte(i*13 + j)
		}
		frames = append(frames, frame(broadcast, src, string(payload)))
	}
	return frames
}

// TestJumboFramesTakeTheirVLANForms floods a full batch of jumbo frames
// from an access port: the trunk gets each tagged, a copy per frame, more
// than the copy pool holds at once, so it starts over mid-batch; none may
// be lost or mixed up.
func TestJumboFramesTakeTheirVLANForms(t *testing.T) {
	f, ports := vlanForwarder(t, access(10), trunk(10), access(10))
	frames := jumboFrames(f.batchSize, mac(1))
	send(f, ports, 0, frames...)
	var tagged10 [][]byte
	for _, fr := range frames {
		tagged10 = append(tagged10, tagged(10, fr))
	}
	wantFrames(t, ports[1], tagged10...)
	wantFrames(t, ports[2], frames...)
	// The pool held fewer tagged copies than the batch made: the trunk's
	// group went out early at least once.
	if f.batchSize*(9022+copyRoom) <= len(f.copies.buf) {
		t.Fatalf("the copy pool (%d bytes) holds the whole batch: the test proves nothing", len(f.copies.buf))
	}
	if calls := ports[1].Counts().TransmitCalls; calls < 2 {
		t.Errorf("the trunk's frames went out in %d transmit, want more than one", calls)
	}
}

// TestJumboRewriteAfterOutput rewrites a copy of each jumbo frame after
// sending the original, then hands the copy to NORMAL, which makes a
// tagged form of it in turn: the pool starts over while the frame being
// worked on is itself a copy in it.
func TestJumboRewriteAfterOutput(t *testing.T) {
	f, ports := vlanForwarder(t, access(10), VLANConfig{}, trunk(10), access(10))
	f.flows.Publish(rules(t, "in_port=1,actions=output:2,mod_dl_src:02:00:00:00:00:77,NORMAL"))
	frames := jumboFrames(f.batchSize, mac(1))
	send(f, ports, 0, frames...)

	var toPort2, toTrunk, toAccess [][]byte
	for _, fr := range frames {
		rewritten := bytes.Clone(fr)
		copy(rewritten[6:12], []byte{2, 0, 0, 0, 0, 0x77})
		// Port 2 has no VLAN configuration: a trunk of every VLAN, which
		// NORMAL sends VLAN 10 tagged, after output:2 sent the original.
		toPort2 = append(toPort2, fr, tagged(10, rewritten))
		toTrunk = append(toTrunk, tagged(10, rewritten))
		toAccess = append(toAccess, rewritten)
	}
	wantFrames(t, ports[1], toPort2...)
	wantFrames(t, ports[2], toTrunk...)
	wantFrames(t, ports[3], toAccess...)
}

func TestJumboForwardingAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	f, loop := loopForwarder(t, jumboFrames(DefaultBatchSize, mac(1)), compileVLAN(access(10)))
	trunkPort := porttest.NewLoop("trunk", nil)
	f.addPort(&bridgePort{Port: trunkPort, ofport: 2, vlan: compileVLAN(trunk(10))})
	allocs := testing.AllocsPerRun(20, func() { f.forwardBatch(f.queues[0]) })
	if allocs != 0 {
		t.Fatalf("forwarding a batch of jumbo frames to a trunk allocates %.1f times; want 0", allocs)
	}
	// Every frame went out tagged, in more transmits than batches.
	c := trunkPort.Counts()
	if batches := loop.Counts().Received / DefaultBatchSize; c.Transmitted != loop.Counts().Received || c.TransmitCalls <= batches {
		t.Fatalf("trunk sent %d of %d frames in %d transmits over %d batches", c.Transmitted, loop.Counts().Received, c.TransmitCalls, batches)
	}
}
