//go:build !race

package conntrack

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The slab's chunks live outside the Go heap, in anonymous mappings of
// their own, so that a table of millions of connections costs the memory
// its slots take, and not up to twice that: the garbage collector lets
// the heap grow to twice what it holds before it runs (GOGC=100), and
// chunks, which hold no pointers, need none of its work. The race
// detector watches only the Go heap, so that a -race build keeps them
// there (chunk_race.go).

// chunksOffHeap says the chunks are not the Go heap's.
const chunksOffHeap = true

func newChunk() (*chunk, bool) {
	p, err := unix.MmapPtr(-1, 0, nil, chunkBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, false
	}
	return (*chunk)(p), true
}

// freeChunks unmaps a tracker's chunks once the tracker is garbage.
func freeChunks(chunks *chunkTable) {
	for i := range chunks {
		if c := chunks[i].Load(); c != nil {
			unix.MunmapPtr(unsafe.Pointer(c), chunkBytes)
		}
	}
}
