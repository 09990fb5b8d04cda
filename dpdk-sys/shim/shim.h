/* Exported wrappers for the static inline DPDK functions int-node calls.
 * Per-burst and rare calls only: per-packet mbuf work is done in Rust over
 * the rte_mbuf fields (a call through here costs 5-6 ns). */
#ifndef INT_NODE_DPDK_SHIM_H
#define INT_NODE_DPDK_SHIM_H

#include <stdint.h>
#include <rte_config.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_cycles.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_ring.h>
#include <rte_ether.h>
#include <rte_ethdev.h>
#include <rte_telemetry.h>

uint16_t shim_rx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **pkts, uint16_t n);
uint16_t shim_tx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **pkts, uint16_t n);
struct rte_mbuf *shim_pktmbuf_alloc(struct rte_mempool *pool);
int shim_pktmbuf_alloc_bulk(struct rte_mempool *pool, struct rte_mbuf **mbufs, unsigned int count);
void shim_pktmbuf_free(struct rte_mbuf *m);
char *shim_pktmbuf_mtod(struct rte_mbuf *m);
char *shim_pktmbuf_prepend(struct rte_mbuf *m, uint16_t len);
char *shim_pktmbuf_adj(struct rte_mbuf *m, uint16_t len);
char *shim_pktmbuf_append(struct rte_mbuf *m, uint16_t len);
uint16_t shim_pktmbuf_headroom(const struct rte_mbuf *m);
unsigned int shim_lcore_id(void);
int shim_errno(void);
int shim_rx_queue_count(uint16_t port_id, uint16_t queue_id);
uint64_t shim_rdtsc(void);

#endif
