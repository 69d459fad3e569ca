/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "rc_varuna.h"
#include "rc_varuna_impl.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <ucs/async/async.h>
#include <ucs/debug/log.h>


/*
 * UCX's wakeup mode (DESIGN.md section 5.7).
 *
 * A worker in wakeup mode sleeps on the interface's event fd once progress
 * finds nothing (uct_iface_event_arm). Two things would not wake it:
 *   - completions on a standby device's CQs (its own completion channel);
 *   - our own work: a port event (seen by the async thread) starts a
 *     failover only in progress, and a failover under way or a lane to
 *     re-protect waits for time to pass.
 * So the event fd is an epoll set of the primary's completion channel, the
 * standby device's, and an eventfd of ours. The device events our
 * progress handles (port state, LAST_WQE_REACHED) signal it from UCX's
 * async thread as they come (uct_rc_varuna_md_wake); work that waits for
 * time to pass (a failover's peer timeout, re-protection's answers and
 * back-offs) has an async timer at the failover check interval signal it,
 * a timer that event_arm adds only while there is such work and removes
 * after: UCX's async thread spins for up to a millisecond before each
 * expiry of a timer (epoll_wait with a timeout rounded down to 0), a few
 * per cent of a core with nothing to do (NEWS.md). event_arm arms both
 * devices' CQs, and refuses (BUSY) only
 * while there is work due now: a port event not handled yet, a failover
 * under way, the pending queues to dispatch, or the periodic check (which
 * runs re-protection) past its time. Endpoints waiting for re-protection
 * are not work due now: after a failover every endpoint waits so until the
 * failed port is back, which may be never, and a worker refused the arm
 * all that time never slept (issue 28). The timer wakes it
 * once per check interval for those that wait for time to pass; a port
 * coming back, a message or a completion wakes it anyway. (UCT's async
 * event callback is no way out: a transport that offers it has UCP ignore
 * its event fd altogether.)
 */


/* Endpoints waiting for re-protection that have something to do at a
 * later check; those that wait for an event are woken by it */
static int uct_rc_varuna_iface_reprotect_timed(uct_rc_varuna_iface_t *iface)
{
    return !ucs_list_is_empty(&iface->fo.reprotect) &&
           iface->fo.reprotect_timed;
}

/* Work that waits for time to pass (the timer's reason to exist) */
static int uct_rc_varuna_iface_work_timed(uct_rc_varuna_iface_t *iface)
{
    return !ucs_list_is_empty(&iface->fo.active) ||
           !ucs_list_is_empty(&iface->fo.failback) ||
           !ucs_list_is_empty(&iface->fo.grow) ||
           uct_rc_varuna_iface_reprotect_timed(iface);
}

/* Anything for the progress, now or later: the timer's hint */
static int uct_rc_varuna_iface_has_work(uct_rc_varuna_iface_t *iface)
{
    return uct_rc_varuna_iface_port_events_new(iface) ||
           uct_rc_varuna_iface_work_timed(iface);
}

/* Work that the progress must do before the worker may sleep */
static int uct_rc_varuna_iface_work_due(uct_rc_varuna_iface_t *iface)
{
    return uct_rc_varuna_iface_port_events_new(iface) ||
           !ucs_list_is_empty(&iface->fo.active) || iface->fo.dispatch ||
           ((uct_rc_varuna_iface_reprotect_timed(iface) ||
             !ucs_list_is_empty(&iface->fo.failback) ||
             !ucs_list_is_empty(&iface->fo.grow)) &&
            (ucs_get_time() >= iface->fo.next_check));
}

static void uct_rc_varuna_iface_wakeup_timer(int timer_id,
                                             ucs_event_set_types_t events,
                                             void *arg)
{
    uct_rc_varuna_iface_t *iface = arg;
    uint64_t one                 = 1;

    /* the async thread reads the lists' heads only: a hint, the worker
     * does the work */
    if (uct_rc_varuna_iface_has_work(iface) &&
        (write(iface->wakeup.efd, &one, sizeof(one)) != sizeof(one))) {
        ucs_debug("rc_varuna: write(eventfd) failed: %m");
    }
}

static ucs_status_t uct_rc_varuna_epoll_add(int epfd, int fd)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events  = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        ucs_error("rc_varuna: epoll_ctl(ADD %d) failed: %m", fd);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t
uct_rc_varuna_iface_wakeup_init(uct_rc_varuna_iface_t *iface,
                                const uct_iface_params_t *params)
{
    ucs_status_t status;

    iface->wakeup.timer_id = -1;
    iface->wakeup.sb_armed = 0;
    iface->wakeup.waker.fd = -1;
    iface->wakeup.efd      = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    iface->wakeup.epfd     = epoll_create1(EPOLL_CLOEXEC);
    if ((iface->wakeup.efd < 0) || (iface->wakeup.epfd < 0)) {
        ucs_error("rc_varuna: eventfd() or epoll_create1() failed: %m");
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    status = uct_rc_varuna_epoll_add(iface->wakeup.epfd,
                                     iface->super.super.comp_channel->fd);
    if (status != UCS_OK) {
        goto err_close;
    }
    status = uct_rc_varuna_epoll_add(iface->wakeup.epfd, iface->wakeup.efd);
    if (status != UCS_OK) {
        goto err_close;
    }
    if (iface->side[UCT_RC_VARUNA_SIDE_STANDBY].separate) {
        status = uct_rc_varuna_epoll_add(iface->wakeup.epfd,
                                         iface->wakeup.sb_channel->fd);
        if (status != UCS_OK) {
            goto err_close;
        }
    }
    iface->wakeup.waker.fd = iface->wakeup.efd;
    uct_rc_varuna_md_waker_add(uct_rc_varuna_iface_md(iface),
                               &iface->wakeup.waker);
    return UCS_OK;

err_close:
    if (iface->wakeup.epfd >= 0) {
        close(iface->wakeup.epfd);
    }
    if (iface->wakeup.efd >= 0) {
        close(iface->wakeup.efd);
    }
    iface->wakeup.epfd = iface->wakeup.efd = -1;
    return status;
}

void uct_rc_varuna_iface_wakeup_cleanup(uct_rc_varuna_iface_t *iface)
{
    if (iface->wakeup.waker.fd >= 0) {
        uct_rc_varuna_md_waker_remove(uct_rc_varuna_iface_md(iface),
                                      &iface->wakeup.waker);
    }
    if (iface->wakeup.timer_id >= 0) {
        ucs_async_remove_handler(iface->wakeup.timer_id, 1);
    }
    if (iface->wakeup.epfd >= 0) {
        close(iface->wakeup.epfd);
    }
    if (iface->wakeup.efd >= 0) {
        close(iface->wakeup.efd);
    }
}

ucs_status_t uct_rc_varuna_iface_event_fd_get(uct_iface_h tl_iface,
                                              int *fd_p)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_rc_varuna_iface_t);

    *fd_p = iface->wakeup.epfd;
    return UCS_OK;
}

/* Take the standby channel's events; BUSY if there were any */
static ucs_status_t
uct_rc_varuna_iface_standby_pre_arm(uct_rc_varuna_iface_t *iface)
{
    uct_rc_varuna_side_t *sb = &iface->side[UCT_RC_VARUNA_SIDE_STANDBY];
    unsigned count[UCT_IB_DIR_NUM] = {};
    struct ibv_cq *cq;
    void *cq_context;
    int dir;

    while (ibv_get_cq_event(iface->wakeup.sb_channel, &cq, &cq_context) == 0) {
        for (dir = 0; dir < UCT_IB_DIR_NUM; dir++) {
            count[dir] += (cq == sb->cq[dir]);
        }
    }
    if (errno != EAGAIN) {
        return UCS_ERR_IO_ERROR;
    }
    for (dir = 0; dir < UCT_IB_DIR_NUM; dir++) {
        if (count[dir] > 0) {
            ibv_ack_cq_events(sb->cq[dir], count[dir]);
        }
    }
    return ((count[UCT_IB_DIR_TX] + count[UCT_IB_DIR_RX]) > 0) ?
           UCS_ERR_BUSY : UCS_OK;
}

ucs_status_t uct_rc_varuna_iface_event_arm(uct_iface_h tl_iface,
                                           unsigned events)
{
    uct_rc_varuna_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_rc_varuna_iface_t);
    uct_rc_varuna_side_t *sb     = &iface->side[UCT_RC_VARUNA_SIDE_STANDBY];
    ucs_async_context_t *async   = iface->super.super.super.worker->async;
    struct epoll_event evs[3];
    ucs_status_t status;
    uint64_t count;

    if (uct_rc_varuna_iface_work_timed(iface)) {
        if (iface->wakeup.timer_id < 0) {
            /* this worker sleeps, and work waits for time to pass */
            status = ucs_async_add_timer(async->mode,
                                         iface->fo.check_interval,
                                         uct_rc_varuna_iface_wakeup_timer,
                                         iface, async,
                                         &iface->wakeup.timer_id);
            if (status != UCS_OK) {
                return status;
            }
        }
    } else if (iface->wakeup.timer_id >= 0) {
        ucs_async_remove_handler(iface->wakeup.timer_id, 1);
        iface->wakeup.timer_id = -1;
    }
    /* what our timer signalled is taken now; the work itself is checked
     * right after */
    while (read(iface->wakeup.efd, &count, sizeof(count)) > 0) {
    }
    if (uct_rc_varuna_iface_work_due(iface)) {
        return UCS_ERR_BUSY;
    }

    if (sb->separate) {
        if (!iface->sb_poll.polled) {
            /* the last progress call skipped the standby's CQs (sparse
             * polling): what they hold would raise no event */
            iface->wakeup.sb_arming = 1;
            return UCS_ERR_BUSY;
        }
        status = uct_rc_varuna_iface_standby_pre_arm(iface);
        if (status != UCS_OK) {
            return status;
        }
    }

    status = uct_rc_iface_event_arm(tl_iface, events);
    if (status != UCS_OK) {
        return status;
    }

    /* the epoll set keeps a member on its ready list until someone waits
     * on it: nobody does (the worker waits on its own set, which holds
     * ours), so without this it would stay readable and a worker waiting
     * for an edge would never get one again. A member still ready now
     * has an event that came after the channels were drained: go on
     * progressing. */
    if (epoll_wait(iface->wakeup.epfd, evs, 3, 0) > 0) {
        return UCS_ERR_BUSY;
    }

    if (sb->separate &&
        (((events & UCT_EVENT_SEND_COMP) &&
          ibv_req_notify_cq(sb->cq[UCT_IB_DIR_TX], 0)) ||
         ((events & (UCT_EVENT_SEND_COMP | UCT_EVENT_RECV)) &&
          ibv_req_notify_cq(sb->cq[UCT_IB_DIR_RX], 0)))) {
        ucs_error("rc_varuna: ibv_req_notify_cq(standby) failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    if (!iface->wakeup.armed) {
        /* A completion added between the last poll and the arming raises
         * no event (rxe reports none for what is already in a CQ; a server
         * slept through the client's last active message so). One more
         * progress call with every CQ armed: if it finds nothing, the next
         * arm may let the worker sleep. */
        iface->wakeup.armed    = 1;
        iface->wakeup.sb_armed = 1;
        return UCS_ERR_BUSY;
    }
    iface->wakeup.sb_arming = 0;
    return UCS_OK;
}
