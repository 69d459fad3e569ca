/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * The per-process packet engine (sib_engine.c) and its sockets (sib_net.c).
 */
#ifndef SIB_ENGINE_H
#define SIB_ENGINE_H

#include "sib.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>


#define SIB_MAX_SOCKS      8
#define SIB_RX_BATCH       32
#define SIB_RX_BUDGET      256      /* datagrams per socket per pass */

/* Several packets for the same process travel in one datagram: the LRH
 * packet length delimits them. It cuts system calls and receiver wake-ups
 * by the batch size; every packet keeps its own headers, PSN and fault
 * decisions. SOFTIB_BATCH=0 sends one packet per datagram (for captures). */
#define SIB_DGRAM_MAX      65000
#define SIB_RX_BUF_SIZE    (SIB_DGRAM_MAX + 1024)
#define SIB_BATCH_PKTS     32
#define SIB_BATCH_IOV      (SIB_BATCH_PKTS * (SIB_MAX_SGE + 2))

struct sib_tx_batch {
    int                 fd;
    struct sockaddr_in  dst;
    struct sib_context *ctx;        /* to count a failed send against */
    uint32_t            npkts;
    uint32_t            bytes;
    uint32_t            niov;
    struct iovec        iov[SIB_BATCH_IOV];
    uint8_t             hdr[SIB_BATCH_PKTS][SIB_MAX_HDR];
    uint8_t             tail[SIB_BATCH_PKTS][8];
};

/* One UDP socket per distinct port IP in this process; contexts share it.
 * The DLID in the LRH, not the socket, says which port a packet is for. */
struct sib_sock {
    int      fd;
    uint32_t ip;                    /* network order */
    uint16_t port;                  /* host order */
};

/* A packet held back by a delay rule */
struct sib_delayed {
    struct sib_list    link;
    uint64_t           due_ns;
    int                fd;
    struct sockaddr_in dst;
    uint32_t           len;
    uint8_t            data[];
};

struct sib_engine {
    pthread_mutex_t      lock;
    int                  refcnt;         /* contexts using the engine */
    struct sib_registry *reg;
    uint64_t             reg_generation; /* last registry change seen */

    struct sib_list      contexts;
    struct sib_context  *slot_ctx[SIB_MAX_SLOTS]; /* demux by QPN */
    struct sib_list      tx_list;        /* QPs with packets to send */
    struct sib_list      timer_list;     /* QPs with a timer running */
    uint64_t             next_timer_ns;
    struct sib_list      delayed;

    struct sib_sock      sock[SIB_MAX_SOCKS];
    unsigned             nsock;

    /* background thread */
    pthread_t            thread;
    int                  thread_running;
    int                  stop;
    int                  epfd_all;       /* sockets + wake */
    int                  epfd_wake;      /* wake only */
    int                  wake_fd;        /* eventfd */
    uint64_t             last_app_poll_ns;
    uint64_t             last_pass_ns;   /* when the last pass ended */
    int                  tx_scheduled;   /* tx_list is not empty */
    int                  lock_waiters;   /* threads in sib_engine_lock() */
    uint64_t             lock_spin_ns;   /* spin before sleeping on it */
    int                  thread_light;   /* waiting on wake_fd only */
    uint64_t             thread_deadline_ns;

    /* SOFTIB_LAST_WQE=0: no LAST_WQE_REACHED, as Linux rxe in kernel 6.1 */
    int                  last_wqe;

    /* transmit batch and receive buffers, used under the engine lock */
    int                  batching;
    struct sib_tx_batch  tx;
    uint8_t             *tx_copy;        /* SIB_DGRAM_MAX, for a batch that
                                            reads unmapped memory */
    uint8_t             *rx_buf;
    struct mmsghdr       rx_msg[SIB_RX_BATCH];
    struct iovec         rx_iov[SIB_RX_BATCH];
};

#endif
