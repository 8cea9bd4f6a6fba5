package flow

import (
	"hash/maphash"
	"iter"
	"math/bits"
	"slices"
)

// bucketTrie maps a subtable's keys to their buckets, persistently: a hash
// array mapped trie (Bagwell's HAMT) over a 64-bit hash of the key, five
// bits a level. An edit copies the nodes on the path to its key, at most
// 13 and in practice log32 of the keys, and shares every other node with
// the version it was made from, which lookups may still be reading; so a
// controller's flow mod, a version of its own, costs O(log n) whatever the
// subtable's size. Nodes an edit made belong to its builder (owner), which
// changes them in place for the rest of its edits, so that adding many
// rules at once copies each node once. Leaves never change.
//
// A subtable keeps it as an overlay of the buckets edited since its base
// map was made (classifier.go), where an empty bucket that is not nil says
// that the key is gone from the base.
type bucketTrie struct {
	root *trieNode
	n    int // keys
}

type trieNode struct {
	owner  *editToken // the builder that made it, which alone changes it (before it publishes)
	bitmap uint32     // which of the 32 children are present
	kids   []trieKid  // the present ones, in bit order
}

// trieKid is a node's child: a subtrie, or the leaf of one hash.
type trieKid struct {
	node *trieNode
	leaf *trieLeaf
}

// trieLeaf holds the keys of one hash: one, unless two keys' 64-bit hashes
// agree.
type trieLeaf struct {
	hash  uint64
	pairs []keyBucket
}

type keyBucket struct {
	key    Key
	bucket []*Entry
}

// editToken identifies a builder: the nodes it may change in place.
type editToken struct{ _ int } // not zero-sized: each token its own address

var trieSeed = maphash.MakeSeed()

func hashKey(k *Key) uint64 { return maphash.Comparable(trieSeed, *k) }

// A node takes trieBits of the hash at each level, and has a bit for each
// of its 1<<trieBits possible children in its 32-bit bitmap.
const trieBits = 5

// trieBit is the bitmap bit of the child for hash h at the level whose
// bits start at shift.
func trieBit(h uint64, shift uint) uint32 { return 1 << (h >> shift & (1<<trieBits - 1)) }

// get returns key's bucket, and whether the trie holds key.
func (t *bucketTrie) get(key *Key) ([]*Entry, bool) { return t.getHashed(hashKey(key), key) }

// getHashed is get for a key whose hash is h.
func (t *bucketTrie) getHashed(h uint64, key *Key) ([]*Entry, bool) {
	nd := t.root
	if nd == nil {
		return nil, false
	}
	for shift := uint(0); ; shift += trieBits {
		bit := trieBit(h, shift)
		if nd.bitmap&bit == 0 {
			return nil, false
		}
		kid := &nd.kids[bits.OnesCount32(nd.bitmap&(bit-1))]
		if kid.leaf != nil {
			if kid.leaf.hash != h {
				return nil, false
			}
			for i := range kid.leaf.pairs {
				if kid.leaf.pairs[i].key == *key {
					return kid.leaf.pairs[i].bucket, true
				}
			}
			return nil, false
		}
		nd = kid.node
	}
}

// set makes bucket key's bucket (nil: removes the key), changing nodes
// owned by tok in place and copying the others.
func (t *bucketTrie) set(key *Key, bucket []*Entry, tok *editToken) {
	t.setHashed(hashKey(key), key, bucket, tok)
}

// setHashed is set for a key whose hash is h.
func (t *bucketTrie) setHashed(h uint64, key *Key, bucket []*Entry, tok *editToken) {
	_, had := t.getHashed(h, key)
	switch {
	case had && bucket == nil:
		t.n--
	case !had && bucket != nil:
		t.n++
	}
	if t.root == nil {
		if bucket == nil {
			return
		}
		t.root = &trieNode{owner: tok}
	}
	t.root = t.root.set(h, 0, key, bucket, tok)
	if len(t.root.kids) == 0 {
		t.root = nil
	}
}

// own returns nd if tok may change it, else a copy that tok may.
func (nd *trieNode) own(tok *editToken) *trieNode {
	if nd.owner == tok {
		return nd
	}
	return &trieNode{owner: tok, bitmap: nd.bitmap, kids: slices.Clone(nd.kids)}
}

func (nd *trieNode) set(h uint64, shift uint, key *Key, bucket []*Entry, tok *editToken) *trieNode {
	bit := trieBit(h, shift)
	i := bits.OnesCount32(nd.bitmap & (bit - 1))
	if nd.bitmap&bit == 0 {
		if bucket == nil {
			return nd
		}
		c := nd.own(tok)
		c.bitmap |= bit
		c.kids = slices.Insert(c.kids, i, trieKid{leaf: &trieLeaf{hash: h, pairs: []keyBucket{{*key, bucket}}}})
		return c
	}
	kid := nd.kids[i]
	switch {
	case kid.node != nil:
		sub := kid.node.set(h, shift+trieBits, key, bucket, tok)
		if sub == kid.node && len(sub.kids) != 0 {
			return nd // unchanged, or changed in place
		}
		kid = trieKid{node: sub}
		if len(sub.kids) == 0 {
			kid = trieKid{}
		}
	case kid.leaf.hash == h:
		leaf := kid.leaf.with(key, bucket)
		if leaf == kid.leaf {
			return nd
		}
		kid = trieKid{}
		if leaf != nil {
			kid.leaf = leaf
		}
	default: // another hash's leaf: both go a level down
		if bucket == nil {
			return nd
		}
		down := shift + trieBits
		sub := &trieNode{owner: tok, bitmap: trieBit(kid.leaf.hash, down), kids: []trieKid{{leaf: kid.leaf}}}
		kid = trieKid{node: sub.set(h, down, key, bucket, tok)}
	}
	c := nd.own(tok)
	if kid == (trieKid{}) {
		c.bitmap &^= bit
		c.kids = slices.Delete(c.kids, i, i+1)
	} else {
		c.kids[i] = kid
	}
	return c
}

// with returns the leaf with key's bucket made bucket (nil: key removed;
// nil if no key is left), or l itself if that changes nothing.
func (l *trieLeaf) with(key *Key, bucket []*Entry) *trieLeaf {
	i := slices.IndexFunc(l.pairs, func(p keyBucket) bool { return p.key == *key })
	switch {
	case i < 0 && bucket == nil:
		return l
	case i < 0:
		return &trieLeaf{hash: l.hash, pairs: append(slices.Clip(l.pairs), keyBucket{*key, bucket})}
	case bucket == nil && len(l.pairs) == 1:
		return nil
	case bucket == nil:
		return &trieLeaf{hash: l.hash, pairs: slices.Delete(slices.Clone(l.pairs), i, i+1)}
	}
	pairs := slices.Clone(l.pairs)
	pairs[i].bucket = bucket
	return &trieLeaf{hash: l.hash, pairs: pairs}
}

// all yields every key and its bucket, in no particular order.
func (t *bucketTrie) all() iter.Seq2[Key, []*Entry] {
	return func(yield func(Key, []*Entry) bool) {
		if t.root != nil {
			t.root.each(yield)
		}
	}
}

func (nd *trieNode) each(yield func(Key, []*Entry) bool) bool {
	for _, kid := range nd.kids {
		if kid.node != nil {
			if !kid.node.each(yield) {
				return false
			}
			continue
		}
		for _, p := range kid.leaf.pairs {
			if !yield(p.key, p.bucket) {
				return false
			}
		}
	}
	return true
}
