//go:build ignore

// Counts the frames that XDP redirected to a device through a DEVMAP (the
// fast path's tx_ports) and that never left: refused at the redirect (the
// device does not take redirects now: a veth whose peer stopped polling
// with NAPI, an empty slot), or dropped when the device was handed the
// batch (a full ring, a tap without room). The kernel reports them only
// in tracepoints, xdp_redirect_err and xdp_devmap_xmit; without these
// counters they would be lost without a trace. xswitch reads its ports'
// (the sweeper, switch/fastpath_sweep.go).

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

// Only the field read; CO-RE finds it in the running kernel's layout.
struct net_device {
	int ifindex;
} __attribute__((preserve_access_index));

// refused: by the DEVMAP's id (high 32 bits) and slot; dropped: by the
// device's ifindex.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u64);
} refused SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps");

static __always_inline void add(void *map, void *key, __u64 n)
{
	__u64 *count = bpf_map_lookup_elem(map, key);

	if (count) {
		*count += n;
		return;
	}
	bpf_map_update_elem(map, key, &n, BPF_NOEXIST);
}

SEC("tp_btf/xdp_redirect_err")
int BPF_PROG(count_refused, const struct net_device *dev, const void *prog, const void *target, int err, int map_type,
	     __u32 map_id, __u32 index)
{
	if (map_type == BPF_MAP_TYPE_DEVMAP) {
		__u64 key = (__u64)map_id << 32 | index;

		add(&refused, &key, 1);
	}
	return 0;
}

SEC("tp_btf/xdp_devmap_xmit")
int BPF_PROG(count_dropped, const struct net_device *from, const struct net_device *to, int sent, int drops, int err)
{
	if (drops > 0) {
		__u32 ifindex = to->ifindex;

		add(&dropped, &ifindex, drops);
	}
	return 0;
}

char __license[] SEC("license") = "Dual BSD/GPL";
