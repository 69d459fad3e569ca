/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Asynchronous events: the engine writes one record per event into the
 * context's pipe (port state changes the registry shows, QP and CQ events);
 * ibv_get_async_event reads them back, dropping the events of QPs destroyed
 * since, as the kernel's uverbs drops the unread events of a destroyed
 * object.
 */
#include "sib_engine.h"
#include "sib_loc.h"
#include "sib_log.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

/* What the async fd carries: one record per event. */
struct sib_async_rec {
    uint32_t type;
    uint32_t qpn;       /* a QP event's QP number, to find it still alive */
    uint64_t element;
};

int sib_async_is_qp_event(enum ibv_event_type type)
{
    switch (type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        return 1;
    default:
        return 0;
    }
}

/* A QP event read from the pipe: the QP if it is still alive, counted as
 * reported so that ibv_destroy_qp waits for its ack (as the kernel's
 * uverbs does); NULL if the QP was destroyed since, and then the event is
 * dropped, as uverbs drops the unread events of a destroyed object. */
static struct sib_qp *sib_async_qp(struct sib_context *ctx,
                                   const struct sib_async_rec *rec)
{
    struct sib_qp *qp;

    pthread_mutex_lock(&ctx->qp_table_lock);
    qp = ctx->qp_table[rec->qpn & (SIB_QPS_PER_SLOT - 1)];
    if ((qp != (struct sib_qp*)(uintptr_t)rec->element) || (qp == NULL) ||
        (sib_qp_ib(qp)->qp_num != rec->qpn)) {
        qp = NULL;
    } else {
        qp->events_reported++;
    }
    pthread_mutex_unlock(&ctx->qp_table_lock);
    return qp;
}

/* Engine lock held (or the context is being set up). */
void sib_async_event(struct sib_context *ctx, enum ibv_event_type type,
                     void *element)
{
    struct sib_async_rec rec;

    memset(&rec, 0, sizeof(rec));
    rec.type    = (uint32_t)type;
    rec.element = (uint64_t)(uintptr_t)element;
    if (sib_async_is_qp_event(type)) {
        rec.qpn = sib_qp_ib((struct sib_qp*)element)->qp_num;
    }
    if (write(ctx->async_wr_fd, &rec, sizeof(rec)) != sizeof(rec)) {
        sib_log_warn("async event %s lost: %m", ibv_event_type_str(type));
    }
}

/* Engine lock held. Report port state changes the registry shows. */
void sib_ctx_sync_ports(struct sib_context *ctx)
{
    struct sib_registry *reg = ctx->eng->reg;
    unsigned port;
    uint32_t state;

    for (port = 1; port <= ctx->dev->num_ports; port++) {
        state = __atomic_load_n(&reg->dev[ctx->dev->index].port[port - 1].state,
                                __ATOMIC_ACQUIRE);
        if (state == ctx->port[port - 1].state) {
            continue;
        }
        ctx->port[port - 1].state = state;
        sib_count(ctx, SIB_CNT_PORT_EVENTS, 1);
        sib_log_info("%s:%u is %s", ctx->dev->ibdev.name, port,
                     (state == SIB_PORT_ACTIVE) ? "active" : "down");
        sib_async_event(ctx, (state == SIB_PORT_ACTIVE) ?
                        IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR,
                        (void*)(uintptr_t)port);
    }
}

/* The next event of a context; -1 with errno EAGAIN when only events of
 * destroyed QPs were there */
int sib_async_read(struct ibv_context *context, struct ibv_async_event *event)
{
    struct sib_async_rec rec;
    struct sib_qp *qp = NULL;
    struct pollfd pfd;
    ssize_t n;

    for (;;) {
        n = read(context->async_fd, &rec, sizeof(rec));
        if (n != sizeof(rec)) {
            if (n >= 0) {
                errno = EIO;
            }
            return -1;
        }
        if (!sib_async_is_qp_event((enum ibv_event_type)rec.type) ||
            ((qp = sib_async_qp(to_sctx(context), &rec)) != NULL)) {
            break;
        }
        /* the event of a destroyed QP was never there: if nothing else is,
         * say so rather than block a caller that polled the fd first */
        pfd.fd     = context->async_fd;
        pfd.events = POLLIN;
        if (poll(&pfd, 1, 0) != 1) {
            errno = EAGAIN;
            return -1;
        }
    }

    event->event_type = (enum ibv_event_type)rec.type;
    switch (event->event_type) {
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
        event->element.port_num = (int)rec.element;
        break;
    case IBV_EVENT_CQ_ERR:
        event->element.cq = &((struct sib_cq*)(uintptr_t)rec.element)->ibcq;
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        event->element.srq =
                &((struct sib_srq*)(uintptr_t)rec.element)->ibsrq;
        break;
    case IBV_EVENT_DEVICE_FATAL:
        event->element.port_num = 0;
        break;
    default:
        event->element.qp = (qp != NULL) ? sib_qp_ib(qp) : NULL;
        break;
    }
    return 0;
}

/* A QP event acknowledged: ibv_destroy_qp waits for that */
void sib_async_ack(struct ibv_async_event *event)
{
    struct ibv_qp *ibqp;

    /* only QP events are waited for (ibv_destroy_qp): the QP stays valid
     * until its events are acknowledged */
    if (!sib_async_is_qp_event(event->event_type) ||
        (event->element.qp == NULL)) {
        return;
    }
    ibqp = event->element.qp;
    pthread_mutex_lock(&ibqp->mutex);
    ibqp->events_completed++;
    pthread_cond_signal(&ibqp->cond);
    pthread_mutex_unlock(&ibqp->mutex);
}
