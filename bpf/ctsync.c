//go:build ignore

// User space's two operations on a connection in ct_conns that must be
// one step with what the fast path programs do to it, under the
// connection's lock (FastpathShared.TakeConn and MergeConn, each run by
// BPF_PROG_RUN on a made-up frame: the connection's handle, then an
// fp_conn). tc programs, not XDP ones: running an XDP program with
// BPF_PROG_RUN repoints the kernel's XDP dispatcher at it and back,
// which costs every CPU's XDP a text patch.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "lib/structs.h"
#include "lib/maps.h"
#include "lib/seq.h"

struct conn_frame {
	__u64 handle;
	struct fp_conn conn;
};

// conn_of is the connection in ct_conns of the frame's handle (*key),
// and the frame's own fp_conn in *in; NULL if either is missing.
static __always_inline struct fp_conn *conn_of(struct __sk_buff *ctx, __u64 *key, struct fp_conn **in)
{
	struct conn_frame *f = (void *)(long)ctx->data;

	if ((void *)(f + 1) > (void *)(long)ctx->data_end)
		return NULL;
	*in = &f->conn;
	*key = f->handle;
	return bpf_map_lookup_elem(&ct_conns, key);
}

// ct_take takes the connection out for user space's tracker, with all the
// programs made of it, into the frame. A lookup-and-delete is not enough:
// a program that found the connection just before the delete still takes
// its lock and moves it on after user space copied it, and that frame's
// change is lost to the tracker. Here the copy and the mark that makes
// every program hand the connection's frames to user space (expires 0,
// conntrack.h's run_conntrack) are one step: a program either moved the
// connection on before the copy or sees the mark; the delete comes after.
SEC("tc")
int ct_take(struct __sk_buff *ctx)
{
	struct fp_conn *out, copy = {};
	__u64 key;
	struct fp_conn *c = conn_of(ctx, &key, &out);

	if (!c)
		return TC_ACT_SHOT;
	bpf_spin_lock(&c->lock);
	copy.proto = c->proto;
	copy.seq_check = c->seq_check;
	copy.orig_only = c->orig_only;
	copy.expires = c->expires;
	copy.timeout = c->timeout;
	copy.dir[0] = c->dir[0];
	copy.dir[1] = c->dir[1];
	c->expires = 0;
	bpf_spin_unlock(&c->lock);
	bpf_map_delete_elem(&ct_conns, &key);
	// The frame's bounds, checked in conn_of, hold no longer for the
	// verifier after the helper calls.
	if ((void *)(out + 1) > (void *)(long)ctx->data_end)
		return TC_ACT_SHOT;
	__builtin_memcpy(out, &copy, sizeof(copy));
	return TC_ACT_OK;
}

static __always_inline __u32 seq_max(__u32 a, __u32 b) { return seq_geq(a, b) ? a : b; }

// ct_merge adds to the connection what the tracker made of a frame the
// programs handed it while they carried the connection on: the frame's
// connection, as the tracker has it now. A carried connection's state
// only moves forward (the TCP edges and largest windows, the expiry), so
// the later of each, the tracker's or the programs', is the state both
// frames made. User space never takes the connection out for such a
// frame: while it is out, the programs hand its every frame over, and at
// a high rate those keep it out.
SEC("tc")
int ct_merge(struct __sk_buff *ctx)
{
	struct fp_conn *in;
	__u64 key;
	struct fp_conn *c = conn_of(ctx, &key, &in);

	if (!c)
		return TC_ACT_SHOT;
	struct fp_conn add = *in;

	bpf_spin_lock(&c->lock);
	if (add.expires > c->expires)
		c->expires = add.expires;
#pragma unroll
	for (int i = 0; i < 2; i++) {
		struct fp_conn_dir *d = &c->dir[i], *a = &add.dir[i];

		d->seq_lo = seq_max(d->seq_lo, a->seq_lo);
		d->seq_hi = seq_max(d->seq_hi, a->seq_hi);
		if (a->max_win > d->max_win)
			d->max_win = a->max_win;
	}
	bpf_spin_unlock(&c->lock);
	return TC_ACT_OK;
}

char __license[] SEC("license") = "Dual BSD/GPL";
