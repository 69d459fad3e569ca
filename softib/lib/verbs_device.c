/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Verbs: devices, contexts, device and port queries; the asynchronous
 * events' transport is in sib_async.c.
 */
#include "sib_engine.h"
#include "sib_loc.h"
#include "sib_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct sib_device sib_devices[SIB_MAX_DEVS];
static int sib_num_devices = -1;
static pthread_mutex_t sib_devices_lock = PTHREAD_MUTEX_INITIALIZER;

static void __attribute__((constructor)) sib_lib_init(void)
{
    sib_log_init();
    sib_opcode_init();
}

/* The device list is fixed for the life of the process, like the devices
 * of a host; the registry says which exist. */
static int sib_devices_load(void)
{
    struct sib_registry *reg;
    struct sib_device *dev;
    unsigned i;
    int ret = 0;

    pthread_mutex_lock(&sib_devices_lock);
    if (sib_num_devices >= 0) {
        goto out;
    }

    ret = sib_registry_attach(&reg);
    if (ret < 0) {
        goto out;
    }

    for (i = 0; i < reg->num_devs; i++) {
        dev                      = &sib_devices[i];
        dev->index               = i;
        dev->num_ports           = reg->dev[i].num_ports;
        dev->ibdev.node_type     = IBV_NODE_CA;
        dev->ibdev.transport_type = IBV_TRANSPORT_IB;
        snprintf(dev->ibdev.name, sizeof(dev->ibdev.name), "%s",
                 reg->dev[i].name);
        /* UCX opens /dev/infiniband/<dev_name>: `softib run` creates it */
        snprintf(dev->ibdev.dev_name, sizeof(dev->ibdev.dev_name), "%s",
                 reg->dev[i].name);
        snprintf(dev->ibdev.dev_path, sizeof(dev->ibdev.dev_path),
                 "/sys/class/infiniband_verbs/%s", reg->dev[i].name);
        snprintf(dev->ibdev.ibdev_path, sizeof(dev->ibdev.ibdev_path),
                 "/sys/class/infiniband/%s", reg->dev[i].name);
    }
    sib_num_devices = (int)reg->num_devs;
    sib_registry_detach(reg);

out:
    pthread_mutex_unlock(&sib_devices_lock);
    return ret;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
    struct ibv_device **list;
    int i, ret;

    ret = sib_devices_load();
    if (ret < 0) {
        errno = -ret;
        return NULL;
    }

    list = calloc((size_t)sib_num_devices + 1, sizeof(*list));
    if (list == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    for (i = 0; i < sib_num_devices; i++) {
        list[i] = &sib_devices[i].ibdev;
    }
    if (num_devices != NULL) {
        *num_devices = sib_num_devices;
    }
    return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
    return device->name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
    return htobe64(sib_port_guid(to_sdev(device)->index, 0));
}

int ibv_get_device_index(struct ibv_device *device)
{
    return (int)to_sdev(device)->index;
}

static void sib_fill_device_attr(struct sib_context *ctx,
                                 struct ibv_device_attr *attr)
{
    memset(attr, 0, sizeof(*attr));
    snprintf(attr->fw_ver, sizeof(attr->fw_ver), "%s", SIB_FW_VER);
    attr->node_guid           = htobe64(sib_port_guid(ctx->dev->index, 0));
    attr->sys_image_guid      = attr->node_guid;
    attr->max_mr_size         = SIB_MAX_MR_SIZE;
    attr->page_size_cap       = 0xfffff000;
    attr->vendor_id           = SIB_VENDOR_ID;
    attr->vendor_part_id      = SIB_VENDOR_PART_ID;
    attr->hw_ver              = SIB_HW_VER;
    attr->max_qp              = SIB_QPS_PER_SLOT;
    attr->max_qp_wr           = SIB_MAX_QP_WR;
    attr->device_cap_flags    = IBV_DEVICE_RC_RNR_NAK_GEN |
                                IBV_DEVICE_SHUTDOWN_PORT |
                                IBV_DEVICE_PORT_ACTIVE_EVENT |
                                IBV_DEVICE_SYS_IMAGE_GUID |
                                IBV_DEVICE_SRQ_RESIZE;
    attr->max_sge             = SIB_MAX_SGE;
    attr->max_sge_rd          = SIB_MAX_SGE;
    attr->max_cq              = 1 << 16;
    attr->max_cqe             = SIB_MAX_CQE;
    attr->max_mr              = 1 << 24;
    attr->max_pd              = 1 << 16;
    attr->max_qp_rd_atom      = SIB_MAX_RD_ATOMIC;
    attr->max_res_rd_atom     = SIB_MAX_RD_ATOMIC * SIB_QPS_PER_SLOT;
    attr->max_qp_init_rd_atom = SIB_MAX_RD_ATOMIC;
    attr->atomic_cap          = IBV_ATOMIC_HCA;
    attr->max_ah              = 1 << 16;
    attr->max_srq             = 1 << 12;
    attr->max_srq_wr          = SIB_MAX_SRQ_WR;
    attr->max_srq_sge         = SIB_MAX_SGE;
    attr->max_pkeys           = 1;
    attr->local_ca_ack_delay  = 15;
    attr->phys_port_cnt       = (uint8_t)ctx->dev->num_ports;
}

int ibv_query_device(struct ibv_context *context,
                     struct ibv_device_attr *device_attr)
{
    sib_fill_device_attr(to_sctx(context), device_attr);
    return 0;
}

static int sib_query_device_ex(struct ibv_context *context,
                               const struct ibv_query_device_ex_input *input,
                               struct ibv_device_attr_ex *attr,
                               size_t attr_size)
{
    (void)input;
    if (attr_size < sizeof(attr->orig_attr)) {
        return EINVAL;
    }
    memset(attr, 0, attr_size);
    sib_fill_device_attr(to_sctx(context), &attr->orig_attr);
    return 0;
}

static int sib_query_port(struct ibv_context *context, uint8_t port_num,
                          struct ibv_port_attr *attr, size_t attr_len)
{
    struct sib_context *ctx  = to_sctx(context);
    struct sib_registry *reg = ctx->eng->reg;
    struct ibv_port_attr pa;
    uint32_t state;

    if ((port_num < 1) || (port_num > ctx->dev->num_ports)) {
        return EINVAL;
    }

    state = __atomic_load_n(&reg->dev[ctx->dev->index].port[port_num - 1].state,
                            __ATOMIC_ACQUIRE);
    memset(&pa, 0, sizeof(pa));
    pa.state           = (enum ibv_port_state)state;
    pa.max_mtu         = SIB_MAX_MTU;
    pa.active_mtu      = SIB_MAX_MTU;
    pa.gid_tbl_len     = 1;
    pa.port_cap_flags  = IBV_PORT_SM;
    pa.max_msg_sz      = SIB_MAX_MSG_SIZE;
    pa.pkey_tbl_len    = 1;
    pa.lid             = sib_registry_lid(ctx->dev->index, port_num);
    pa.sm_lid          = 1;
    pa.max_vl_num      = 1;
    pa.subnet_timeout  = 18;
    pa.active_width    = 2;    /* 4X */
    pa.active_speed    = 32;   /* EDR: 4X EDR reads as 100 Gb/s */
    pa.phys_state      = (state == SIB_PORT_ACTIVE) ? 5 /* LinkUp */ :
                                                      3 /* Disabled */;
    pa.link_layer      = IBV_LINK_LAYER_INFINIBAND;

    memcpy(attr, &pa, (attr_len < sizeof(pa)) ? attr_len : sizeof(pa));
    return 0;
}

/* The exported entry, reached only by binaries built before the inline
 * ibv_query_port wrapper existed; they pass the older, shorter struct. */
#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
                   struct _compat_ibv_port_attr *port_attr)
{
    return sib_query_port(context, port_num, (struct ibv_port_attr*)port_attr,
                          offsetof(struct ibv_port_attr, flags));
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
                  union ibv_gid *gid)
{
    struct sib_context *ctx = to_sctx(context);

    if ((port_num < 1) || (port_num > ctx->dev->num_ports) || (index != 0)) {
        errno = EINVAL;
        return -1;
    }
    sib_port_gid(ctx->dev->index, port_num, gid->raw);
    return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
                      uint32_t gid_index, struct ibv_gid_entry *entry,
                      uint32_t flags, size_t entry_size)
{
    struct sib_context *ctx = to_sctx(context);

    if ((flags != 0) || (entry_size < sizeof(*entry)) || (port_num < 1) ||
        (port_num > ctx->dev->num_ports) || (gid_index != 0)) {
        return EINVAL;
    }
    memset(entry, 0, sizeof(*entry));
    sib_port_gid(ctx->dev->index, port_num, entry->gid.raw);
    entry->gid_index = gid_index;
    entry->port_num  = port_num;
    entry->gid_type  = IBV_GID_TYPE_IB;
    return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context,
                             struct ibv_gid_entry *entries,
                             size_t max_entries, uint32_t flags,
                             size_t entry_size)
{
    struct sib_context *ctx = to_sctx(context);
    size_t n = 0;
    unsigned port;

    if ((flags != 0) || (entry_size < sizeof(*entries))) {
        return -EINVAL;
    }
    for (port = 1; port <= ctx->dev->num_ports; port++) {
        if (n == max_entries) {
            return -EINVAL;
        }
        _ibv_query_gid_ex(context, port, 0,
                          (struct ibv_gid_entry*)((uint8_t*)entries +
                                                  n * entry_size),
                          0, entry_size);
        n++;
    }
    return (ssize_t)n;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
                   __be16 *pkey)
{
    struct sib_context *ctx = to_sctx(context);

    if ((port_num < 1) || (port_num > ctx->dev->num_ports) || (index != 0)) {
        errno = EINVAL;
        return -1;
    }
    *pkey = htobe16(SIB_DEFAULT_PKEY);
    return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num,
                       __be16 pkey)
{
    (void)context;
    (void)port_num;
    /* the one entry is the default full-member key; a limited-member
     * request matches it too (IBA 10.9.3) */
    if ((be16toh(pkey) & 0x7fff) == (SIB_DEFAULT_PKEY & 0x7fff)) {
        return 0;
    }
    errno = ENOENT;
    return -1;
}

static void sib_ctx_init_ops(struct sib_context *ctx)
{
    struct ibv_context *context = &ctx->vctx.context;

    context->ops.post_send     = sib_post_send;
    context->ops.post_recv     = sib_post_recv;
    context->ops.post_srq_recv = sib_post_srq_recv;
    context->ops.poll_cq       = sib_poll_cq;
    context->ops.req_notify_cq = sib_req_notify_cq;

    /* the extended ops the inline verbs.h wrappers look up; everything
     * left NULL answers EOPNOTSUPP there */
    ctx->vctx.query_port      = sib_query_port;
    ctx->vctx.query_device_ex = sib_query_device_ex;
    ctx->vctx.create_qp_ex    = sib_create_qp_ex;
    ctx->vctx.sz              = sizeof(ctx->vctx);
    context->abi_compat       = __VERBS_ABI_IS_EXTENDED;
}

static int sib_ctx_open_ports(struct sib_context *ctx, uint16_t *udp_ports)
{
    struct sib_registry *reg = ctx->eng->reg;
    unsigned port;
    int ret;

    for (port = 0; port < SIB_MAX_PORTS; port++) {
        udp_ports[port] = 0;
        if (port >= ctx->dev->num_ports) {
            continue;
        }
        ret = sib_engine_udp_port(ctx->eng,
                                  reg->dev[ctx->dev->index].port[port].ip,
                                  &udp_ports[port]);
        if (ret < 0) {
            return ret;
        }
        ctx->port[port].state = reg->dev[ctx->dev->index].port[port].state;
    }
    return 0;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    struct sib_device *dev = to_sdev(device);
    uint16_t udp_ports[SIB_MAX_PORTS];
    struct sib_context *ctx;
    int fds[2], ret;

    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ctx->dev = dev;
    pthread_mutex_init(&ctx->qp_table_lock, NULL);

    ret = sib_engine_get(&ctx->eng);
    if (ret < 0) {
        goto err_free;
    }

    if (pipe2(fds, O_CLOEXEC) < 0) {
        ret = -errno;
        goto err_put_engine;
    }
    /* an application that never reads events must not stall the engine */
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    ctx->vctx.context.async_fd = fds[0];
    ctx->async_wr_fd           = fds[1];

    sib_engine_lock(ctx->eng);
    ret = sib_ctx_open_ports(ctx, udp_ports);
    if (ret == 0) {
        ret = sib_registry_slot_alloc(ctx->eng->reg, dev->index, udp_ports,
                                      &ctx->slot);
    }
    if (ret < 0) {
        sib_engine_unlock(ctx->eng);
        goto err_close_pipe;
    }
    ctx->reg_slot = &ctx->eng->reg->slot[ctx->slot];
    sib_engine_add_context(ctx->eng, ctx);
    sib_engine_unlock(ctx->eng);

    ctx->vctx.context.device           = device;
    ctx->vctx.context.cmd_fd           = -1;
    ctx->vctx.context.num_comp_vectors = 1;
    pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
    sib_ctx_init_ops(ctx);

    sib_log_debug("opened %s in slot %u", device->name, ctx->slot);
    return &ctx->vctx.context;

err_close_pipe:
    close(fds[0]);
    close(fds[1]);
err_put_engine:
    sib_engine_put(ctx->eng);
err_free:
    pthread_mutex_destroy(&ctx->qp_table_lock);
    free(ctx);
    errno = -ret;
    return NULL;
}

int ibv_close_device(struct ibv_context *context)
{
    struct sib_context *ctx = to_sctx(context);
    struct sib_engine *eng  = ctx->eng;

    sib_engine_lock(eng);
    sib_engine_del_context(eng, ctx);
    sib_engine_unlock(eng);

    sib_registry_slot_free(eng->reg, ctx->slot);
    close(context->async_fd);
    close(ctx->async_wr_fd);
    pthread_mutex_destroy(&context->mutex);
    pthread_mutex_destroy(&ctx->qp_table_lock);
    free(ctx->mr_table);
    free(ctx);
    sib_engine_put(eng);
    return 0;
}

int ibv_get_async_event(struct ibv_context *context,
                        struct ibv_async_event *event)
{
    return sib_async_read(context, event);
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
    sib_async_ack(event);
}

int ibv_fork_init(void)
{
    /* No pinning, no madvise(DONTFORK): fork is harmless to registrations
     * of a software device. */
    return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_UNNEEDED;
}
