// SPDX-License-Identifier: BSD-3-Clause
// The interop harness's lossy link: drops every 50th IPv4 packet (never
// ARP), at XDP (a port's ingress) or at TC egress. The counter is shared by
// all CPUs and not atomic (a race may move a drop by a packet): both sides
// count the losses that happen, whatever they are.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

static __u64 seen;

static __always_inline int drop_this(void *data, void *data_end)
{
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
        return 0;
    seen += 1;
    return seen % 50 == 0;
}

SEC("xdp")
int xdp_drop(struct xdp_md *ctx)
{
    return drop_this((void *)(long)ctx->data, (void *)(long)ctx->data_end) ? XDP_DROP : XDP_PASS;
}

SEC("tc")
int tc_drop(struct __sk_buff *skb)
{
    return drop_this((void *)(long)skb->data, (void *)(long)skb->data_end) ? TC_ACT_SHOT : TC_ACT_OK;
}

char _license[] SEC("license") = "Dual BSD/GPL";
