//go:build ignore

// Takes a connection out of ct_conns for user space's tracker
// (FastpathShared.TakeConn, run by BPF_PROG_RUN on a made-up frame: the
// connection's handle, then room for its fp_conn). A lookup-and-delete
// from user space is not enough: a fast path program that found the
// connection just before the delete still takes its lock and moves it on
// after user space copied it, and that frame's change is lost to the
// tracker, which goes on from a state the connection has left (a window
// behind, a segment uncounted). Here the copy and the mark that makes
// every program hand the connection's frames to user space (expires 0,
// conntrack.h's run_conntrack) are one step under the connection's
// lock: a program either moved the connection on before the copy or
// sees the mark, and the delete comes after.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "lib/structs.h"
#include "lib/maps.h"

SEC("xdp")
int ct_take(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	__u64 *handle = data;
	struct fp_conn *out = data + sizeof(*handle);

	if ((void *)(out + 1) > data_end)
		return XDP_ABORTED;
	__u64 key = *handle;
	struct fp_conn *c = bpf_map_lookup_elem(&ct_conns, &key);
	if (!c)
		return XDP_DROP;
	struct fp_conn copy = {};

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
	__builtin_memcpy(out, &copy, sizeof(copy));
	return XDP_PASS;
}

char __license[] SEC("license") = "Dual BSD/GPL";
