//go:build race

package conntrack

// A -race build keeps the slab's chunks on the Go heap, where the race
// detector sees what the tracker's threads do to them (chunk.go).

const chunksOffHeap = false

func newChunk() (*chunk, bool) { return new(chunk), true }

func freeChunks(*chunkTable) {}
