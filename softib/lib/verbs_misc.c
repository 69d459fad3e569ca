/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Verbs: names, rates, and the features this device does not have
 * (multicast, ECE, shared objects, kernel structures). An unsupported call
 * fails cleanly with EOPNOTSUPP; it never pretends to work.
 */
#include "sib_loc.h"

#include <errno.h>
#include <stdio.h>


static const char *const sib_wc_status_name[] = {
    [IBV_WC_SUCCESS]            = "success",
    [IBV_WC_LOC_LEN_ERR]        = "local length error",
    [IBV_WC_LOC_QP_OP_ERR]      = "local QP operation error",
    [IBV_WC_LOC_EEC_OP_ERR]     = "local EE context operation error",
    [IBV_WC_LOC_PROT_ERR]       = "local protection error",
    [IBV_WC_WR_FLUSH_ERR]       = "Work Request Flushed Error",
    [IBV_WC_MW_BIND_ERR]        = "memory window bind error",
    [IBV_WC_BAD_RESP_ERR]       = "bad response error",
    [IBV_WC_LOC_ACCESS_ERR]     = "local access error",
    [IBV_WC_REM_INV_REQ_ERR]    = "remote invalid request error",
    [IBV_WC_REM_ACCESS_ERR]     = "remote access error",
    [IBV_WC_REM_OP_ERR]         = "remote operation error",
    [IBV_WC_RETRY_EXC_ERR]      = "transport retry counter exceeded",
    [IBV_WC_RNR_RETRY_EXC_ERR]  = "RNR retry counter exceeded",
    [IBV_WC_LOC_RDD_VIOL_ERR]   = "local RDD violation error",
    [IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
    [IBV_WC_REM_ABORT_ERR]      = "aborted error",
    [IBV_WC_INV_EECN_ERR]       = "invalid EE context number",
    [IBV_WC_INV_EEC_STATE_ERR]  = "invalid EE context state",
    [IBV_WC_FATAL_ERR]          = "fatal error",
    [IBV_WC_RESP_TIMEOUT_ERR]   = "response timeout error",
    [IBV_WC_GENERAL_ERR]        = "general error",
    [IBV_WC_TM_ERR]             = "TM error",
    [IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
};

static const char *const sib_event_name[] = {
    [IBV_EVENT_CQ_ERR]              = "CQ error",
    [IBV_EVENT_QP_FATAL]            = "local work queue catastrophic error",
    [IBV_EVENT_QP_REQ_ERR]          = "invalid request local work queue error",
    [IBV_EVENT_QP_ACCESS_ERR]       = "local access violation work queue error",
    [IBV_EVENT_COMM_EST]            = "communication established",
    [IBV_EVENT_SQ_DRAINED]          = "send queue drained",
    [IBV_EVENT_PATH_MIG]            = "path migrated",
    [IBV_EVENT_PATH_MIG_ERR]        = "path migration request error",
    [IBV_EVENT_DEVICE_FATAL]        = "local catastrophic error",
    [IBV_EVENT_PORT_ACTIVE]         = "port active",
    [IBV_EVENT_PORT_ERR]            = "port error",
    [IBV_EVENT_LID_CHANGE]          = "LID change",
    [IBV_EVENT_PKEY_CHANGE]         = "P_key change",
    [IBV_EVENT_SM_CHANGE]           = "SM change",
    [IBV_EVENT_SRQ_ERR]             = "SRQ catastrophic error",
    [IBV_EVENT_SRQ_LIMIT_REACHED]   = "SRQ limit reached",
    [IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
    [IBV_EVENT_CLIENT_REREGISTER]   = "client reregistration",
    [IBV_EVENT_GID_CHANGE]          = "GID table change",
    [IBV_EVENT_WQ_FATAL]            = "WQ fatal",
};

#define SIB_NAME(_table, _value) \
    ((((unsigned)(_value)) < sizeof(_table) / sizeof((_table)[0]) && \
      (_table)[_value] != NULL) ? (_table)[_value] : "unknown")

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    return SIB_NAME(sib_wc_status_name, status);
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
    return SIB_NAME(sib_event_name, event);
}

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
    switch (node_type) {
    case IBV_NODE_CA:
        return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH:
        return "InfiniBand switch";
    case IBV_NODE_ROUTER:
        return "InfiniBand router";
    case IBV_NODE_RNIC:
        return "iWARP NIC";
    case IBV_NODE_USNIC:
        return "usNIC";
    case IBV_NODE_USNIC_UDP:
        return "usNIC UDP";
    default:
        return "unknown";
    }
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
    switch (port_state) {
    case IBV_PORT_NOP:
        return "PORT_NOP";
    case IBV_PORT_DOWN:
        return "PORT_DOWN";
    case IBV_PORT_INIT:
        return "PORT_INIT";
    case IBV_PORT_ARMED:
        return "PORT_ARMED";
    case IBV_PORT_ACTIVE:
        return "PORT_ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
        return "PORT_ACTIVE_DEFER";
    default:
        return "invalid state";
    }
}

/* IB static rate enum <-> multiple of 2.5 Gb/s and Mb/s (IBA 9.11.2) */
static const struct {
    enum ibv_rate rate;
    int           mult;
    int           mbps;
} sib_rates[] = {
    { IBV_RATE_2_5_GBPS,   1,   2500 }, { IBV_RATE_5_GBPS,    2,   5000 },
    { IBV_RATE_10_GBPS,    4,  10000 }, { IBV_RATE_20_GBPS,   8,  20000 },
    { IBV_RATE_30_GBPS,   12,  30000 }, { IBV_RATE_40_GBPS,  16,  40000 },
    { IBV_RATE_60_GBPS,   24,  60000 }, { IBV_RATE_80_GBPS,  32,  80000 },
    { IBV_RATE_120_GBPS,  48, 120000 }, { IBV_RATE_14_GBPS,   0,  14062 },
    { IBV_RATE_56_GBPS,   0,  56250 },  { IBV_RATE_112_GBPS,  0, 112500 },
    { IBV_RATE_168_GBPS,  0, 168750 },  { IBV_RATE_25_GBPS,  10,  25781 },
    { IBV_RATE_100_GBPS, 40, 103125 },  { IBV_RATE_200_GBPS, 80, 206250 },
    { IBV_RATE_300_GBPS, 120, 309375 }, { IBV_RATE_28_GBPS,   0,  28125 },
    { IBV_RATE_50_GBPS,  20,  53125 },  { IBV_RATE_400_GBPS, 160, 425000 },
    { IBV_RATE_600_GBPS, 240, 637500 },
};

#define SIB_NUM_RATES (sizeof(sib_rates) / sizeof(sib_rates[0]))

int ibv_rate_to_mult(enum ibv_rate rate)
{
    unsigned i;

    for (i = 0; i < SIB_NUM_RATES; i++) {
        if (sib_rates[i].rate == rate) {
            return sib_rates[i].mult ? sib_rates[i].mult : -1;
        }
    }
    return -1;
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
    unsigned i;

    for (i = 0; i < SIB_NUM_RATES; i++) {
        if ((sib_rates[i].mult != 0) && (sib_rates[i].mult == mult)) {
            return sib_rates[i].rate;
        }
    }
    return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate)
{
    unsigned i;

    for (i = 0; i < SIB_NUM_RATES; i++) {
        if (sib_rates[i].rate == rate) {
            return sib_rates[i].mbps;
        }
    }
    return -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps)
{
    unsigned i;

    for (i = 0; i < SIB_NUM_RATES; i++) {
        if (sib_rates[i].mbps == mbps) {
            return sib_rates[i].rate;
        }
    }
    return IBV_RATE_MAX;
}

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
    (void)qp;
    (void)gid;
    (void)lid;
    return EOPNOTSUPP;
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
    (void)qp;
    (void)gid;
    (void)lid;
    return EOPNOTSUPP;
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
                                struct ibv_ah_attr *attr,
                                uint8_t eth_mac[ETHERNET_LL_SIZE],
                                uint16_t *vid)
{
    (void)context;
    (void)attr;
    (void)eth_mac;
    (void)vid;
    return EOPNOTSUPP; /* InfiniBand link layer: no Ethernet addresses */
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    (void)qp;
    (void)ece;
    return EOPNOTSUPP;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
    (void)qp;
    (void)ece;
    return EOPNOTSUPP;
}

int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
                               uint32_t flags)
{
    (void)qp;
    (void)op;
    (void)flags;
    return 1; /* the responder places every packet's data in PSN order */
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
    (void)cmd_fd;
    errno = EOPNOTSUPP;
    return NULL;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
    (void)context;
    (void)pd_handle;
    errno = EOPNOTSUPP;
    return NULL;
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
    (void)pd;
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
    (void)pd;
    (void)mr_handle;
    errno = EOPNOTSUPP;
    return NULL;
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
    (void)mr;
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
    (void)context;
    (void)dm_handle;
    errno = EOPNOTSUPP;
    return NULL;
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
    (void)dm;
}

/* Conversions from kernel ABI structures (used by librdmacm and the SA
 * helpers). A software device has no kernel side, so nothing ever hands
 * us such a structure; the entries exist because binaries bind them. */
void ibv_copy_qp_attr_from_kern(void *dst, void *src);
void ibv_copy_ah_attr_from_kern(void *dst, void *src);
void ibv_copy_path_rec_from_kern(void *dst, void *src);
void ibv_copy_path_rec_to_kern(void *dst, void *src);
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
                        size_t size);

void ibv_copy_qp_attr_from_kern(void *dst, void *src)
{
    (void)dst;
    (void)src;
}

void ibv_copy_ah_attr_from_kern(void *dst, void *src)
{
    (void)dst;
    (void)src;
}

void ibv_copy_path_rec_from_kern(void *dst, void *src)
{
    (void)dst;
    (void)src;
}

void ibv_copy_path_rec_to_kern(void *dst, void *src)
{
    (void)dst;
    (void)src;
}

const char *ibv_get_sysfs_path(void)
{
    return "/sys";
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
                        size_t size)
{
    (void)dir;
    (void)file;
    (void)buf;
    (void)size;
    errno = ENOENT; /* the device has no sysfs presence */
    return -1;
}
