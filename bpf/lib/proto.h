// Wire headers, and their constants, that the kernel's uapi headers do
// not give a BPF program: the kernel keeps its own definitions internal
// (linux/if_vlan.h, net/ip.h, net/vxlan.h, net/geneve.h), or their uapi
// header pulls in libc's (linux/if_arp.h, linux/icmp.h). They are named
// as the kernel names them, where it does.

#ifndef XSWITCH_PROTO_H
#define XSWITCH_PROTO_H

#include <stddef.h>
#include <linux/types.h>
#include <linux/if_ether.h>

// An 802.1Q or 802.1ad tag as it follows its TPID, which stands where an
// untagged frame has its EtherType: the tag's TCI, then the EtherType (or
// the next tag's TPID).
struct vlan_hdr {
	__be16 h_vlan_TCI;
	__be16 h_vlan_encapsulated_proto;
};

// An Ethernet header with one tag: what a pushed tag's frame starts with.
struct vlan_ethhdr {
	__u8 h_dest[ETH_ALEN];
	__u8 h_source[ETH_ALEN];
	__be16 h_vlan_proto; // the TPID
	__be16 h_vlan_TCI;
	__be16 h_vlan_encapsulated_proto;
};

_Static_assert(sizeof(struct vlan_hdr) == 4, "an 802.1Q tag is 4 bytes");
_Static_assert(offsetof(struct vlan_ethhdr, h_vlan_proto) == offsetof(struct ethhdr, h_proto),
	       "a tag's TPID is where the EtherType was");
_Static_assert(offsetof(struct vlan_ethhdr, h_vlan_TCI) == sizeof(struct ethhdr) &&
		       sizeof(struct vlan_ethhdr) == sizeof(struct ethhdr) + sizeof(struct vlan_hdr),
	       "a tagged frame's Ethernet header is its untagged one and a vlan_hdr");

// IPv4's more-fragments flag and fragment offset, in frag_off.
#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

// ARP for IPv4 over Ethernet: struct arphdr, then the addresses.
#define ARPHRD_ETHER 1

struct arp_eth_ipv4 {
	__be16 ar_hrd;
	__be16 ar_pro;
	__u8 ar_hln;
	__u8 ar_pln;
	__be16 ar_op;
	__u8 ar_sha[ETH_ALEN];
	__u8 ar_sip[4];
	__u8 ar_tha[ETH_ALEN];
	__u8 ar_tip[4];
};

_Static_assert(sizeof(struct arp_eth_ipv4) == 28, "ARP for IPv4 over Ethernet is 28 bytes");

// What ICMPv4 and ICMPv6 headers start with; ICMPv4's whole header is
// ICMPV4_HLEN bytes.
struct icmp_common {
	__u8 type;
	__u8 code;
	__sum16 checksum;
};

#define ICMPV4_HLEN 8

// An IPv6 neighbour solicitation and advertisement are ICMPv6's types 135
// and 136 with code 0.
#define NDISC_NEIGHBOUR_SOLICITATION 135
#define NDISC_NEIGHBOUR_ADVERTISEMENT 136

// SCTP's common header (RFC 9260): the ports, the verification tag, the
// CRC32c.

struct sctp_common {
	__be16 source;
	__be16 dest;
	__be32 vtag;
	__le32 checksum;
};

_Static_assert(sizeof(struct sctp_common) == 12, "SCTP's common header is 12 bytes");

// VXLAN (RFC 7348) and Geneve (RFC 8926) headers, without Geneve's
// options: 8 bytes each, with the VNI in the high 24 bits of the second
// word (vni is VNI << 8, in network order).
struct vxlan_hdr {
	__u8 flags;
	__u8 reserved[3];
	__be32 vni;
};

#define VXLAN_F_VNI 0x08 // the I flag: the VNI is valid

struct geneve_hdr {
	__u8 ver_opt_len; // the version (2 bits), then the options' length in 4-byte words
	__u8 flags;
	__be16 proto_type; // ETH_P_TEB for an Ethernet frame
	__be32 vni;
};

#define GENEVE_VER_SHIFT 6
#define GENEVE_OPT_LEN_MASK 0x3f
#define GENEVE_F_CRITICAL 0x40 // C: a critical option is present

_Static_assert(sizeof(struct vxlan_hdr) == 8 && sizeof(struct geneve_hdr) == 8, "VXLAN and Geneve headers are 8 bytes");
_Static_assert(offsetof(struct vxlan_hdr, vni) == offsetof(struct geneve_hdr, vni),
	       "one store writes the VNI of either");

#endif
