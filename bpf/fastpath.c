//go:build ignore

// Every port's XDP program when the fast path is on. It reads the frame's
// flow key (lib/parse.h; on a tunnel underlay, once it has taken the
// outer headers off a tunnel's frame, lib/encap.h), looks the key up in
// the decisions user space installed for the bridge (lib/maps.h), and,
// if the entry is of the bridge's current generation, runs its
// operations on the frame (lib/actions.h), counts it and sends it out of
// a port of tx_ports, or drops it. Anything else (a frame it cannot read,
// a frame in several buffers, no entry, an entry of an older generation,
// a frame whose connection's tracker must judge it: lib/conntrack.h) is
// user space's: it goes to the port's AF_XDP socket (lib/xsk.h), as with
// xsk.c. Every frame it drops it counts by reason in drops.
//
// It is one program for all of a bridge's ports, reached from each
// port's own (entry.c) with a tail call, which says in fp_port which port
// the frame came in on (lib/entry.h); what it leaves to user space goes
// on to the port's xsk_redirect. With record_key set at load time it
// stores the key it read, for the tests, which run it with BPF_PROG_RUN
// through a port's entry program.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "lib/structs.h"
#include "lib/maps.h"
#include "lib/parse.h"
#include "lib/actions.h"
#include "lib/conntrack.h"
#include "lib/encap.h"
#include "lib/entry.h"

// So that the enums user space uses are in the object's BTF, for
// bpf2go's -type (gen.go).
struct fp_enums {
	enum fp_op_type op;
	enum fp_csum csum;
	enum fp_mask_kind mask;
	enum fp_drop_reason drop;
	enum tunnel_kind tunnel;
	enum fp_band_type band;
};

const struct fp_enums *fp_enums_for_go __attribute__((unused));

// record_key makes the program store each key, and what an entry did
// with the frame, in parsed (tests only).
volatile const __u8 record_key = 0;

// to_user hands a frame to user space, through the program of the port
// in slot: whole again if its outer headers were popped. A port that is
// leaving has no program there any more: its frame is the host's, as
// with no socket for its queue.
static __always_inline int to_user(struct xdp_md *ctx, __u32 popped, __u32 slot)
{
	if (popped && bpf_xdp_adjust_head(ctx, -(int)popped))
		return drop(FP_DROP_RESTORE); // unreachable: the headers are where they were
	bpf_tail_call(ctx, &fp_sockets, slot);
	return XDP_PASS;
}

// lookup returns key's entry of the bridge's current generation, looked
// up as the bridge's state says (fp_mask_kind); it masks key in place.
static __always_inline struct fp_flow *lookup(struct fp_key *key)
{
	__u32 zero = 0;
	__u32 *slot = bpf_map_lookup_elem(&state_slot, &zero);

	if (!slot)
		return NULL;
	__u32 current = *slot & 1;
	struct fp_state *st = bpf_map_lookup_elem(&state, &current);

	if (!st)
		return NULL;
	if (st->masked == FP_MASK_BITS) {
		__u16 *k = (__u16 *)key;
		__u16 *m = (__u16 *)&st->mask;

#pragma unroll
		for (int i = 0; i < FP_KEY_WORDS; i++)
			k[i] &= m[i];
	}
	key->gen = st->generation;
	if (st->masked == FP_MASK_L2)
		return bpf_map_lookup_elem(&flows_l2, key); // its first fields, an fp_l2_key
	return bpf_map_lookup_elem(&flows, key);
}

// recording returns where to store what the program read of the frame,
// and what an entry did with it, when record_key is set.
static __always_inline struct fp_parsed *recording(void)
{
	__u32 zero = 0;

	return record_key ? bpf_map_lookup_elem(&parsed, &zero) : NULL;
}

SEC("xdp.frags")
int fastpath(struct xdp_md *ctx)
{
	struct fp_key key = {};
	__u32 l3 = 0, popped = 0;
	__u64 len = (long)ctx->data_end - (long)ctx->data;
	// A frame in several buffers is user space's: the parser reads only
	// the first.
	int whole = bpf_xdp_get_buff_len(ctx) == len;
	__u32 zero = 0;
	struct fp_port *in = bpf_map_lookup_elem(&fp_port, &zero);

	if (!in)
		return XDP_PASS; // unreachable: an array's element
	__u16 port = in->in_port, slot = in->slot;
	__u32 max_frame_len = in->max_frame_len;

	if (in->underlay) {
		if (!whole || len > max_frame_len)
			return to_user(ctx, 0, slot);
		popped = tunnel_pop(ctx, &in->outer, slot, &key);
		if (!popped || bpf_xdp_adjust_head(ctx, popped))
			return to_user(ctx, 0, slot);
		port = key.in_port;
		len -= popped;
	}
	int ok = whole && parse(ctx, &key, &l3, port);
	struct fp_parsed *rec = recording();

	if (rec) {
		rec->ok = ok;
		rec->key = key;
		rec->hit = 0;
	}
	if (!ok || len > max_frame_len)
		return to_user(ctx, popped, slot);
	// The flow's own key, for the hash of a tunnel push: lookup masks the
	// one it looks up.
	struct fp_key flow = key;
	struct fp_flow *f = lookup(&key);

	if (!f || (f->max_len && len > f->max_len))
		return to_user(ctx, popped, slot);
	// A slot emptied under the entry (its interface unregistered) would
	// drop the frame without a trace: user space sends it, and counts
	// what its port cannot take.
	if (f->out != FP_OUT_DROP && !bpf_map_lookup_elem(&tx_ports, &f->out))
		return to_user(ctx, popped, slot);
	if (rec) {
		rec->hit = 1;
		rec->out = f->out;
	}
	// A connection is an entry's first operation, or none; a meter the
	// first after it, or none: called from one place each, they cost
	// the verifier one way through, not one per operation of run_ops'
	// unrolled loop. The connection comes first because it may give the
	// frame back to user space, which must find it as it came, and not
	// metered yet.
	int run = FP_RUN_OK;
	struct fp_op *first = &f->ops[0];

	if (first->type == FP_OP_CONNTRACK) {
		run = run_conntrack(ctx, first->delta, first->tunnel, first->len, l3);
		first = &f->ops[1];
	}
	if (run == FP_RUN_OK && first->type == FP_OP_METER)
		run = run_meter(ctx, first->tunnel, first->delta, first->len, l3);
	if (run == FP_RUN_OK)
		run = run_ops(ctx, f, l3, &flow);

	if (run == FP_RUN_USER)
		return to_user(ctx, popped, slot);
	if (run == FP_RUN_FAILED)
		return drop(FP_DROP_OP_FAILED);
	f->packets++;
	f->bytes += len;
	if (run == FP_RUN_METERED) {
		f->metered++;
		f->metered_bytes += len;
		return drop(FP_DROP_METER);
	}
	if (f->out == FP_OUT_DROP)
		return drop(FP_DROP_RULE);
	// A slot emptied since the lookup above drops the frame: its bytes
	// may already be rewritten.
	int action = bpf_redirect_map(&tx_ports, f->out, XDP_DROP);

	if (action == XDP_DROP)
		return drop(FP_DROP_PORT_GONE);
	return action;
}

char __license[] SEC("license") = "Dual BSD/GPL";
