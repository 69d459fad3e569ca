/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucp_failover_int.h"

#include <ucp/core/ucp_context.h>
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_ep.inl>
#include <ucp/core/ucp_mm.h>
#include <ucp/core/ucp_mm.inl>
#include <ucp/core/ucp_request.h>
#include <ucp/core/ucp_request.inl>
#include <ucp/core/ucp_rkey.h>
#include <ucp/core/ucp_worker.h>
#include <ucs/datastruct/khash.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/stubs.h>
#include <ucs/type/spinlock.h>


/*
 * Another memory domain: the translating endpoint
 *
 * The failed lane's operations (those handed back, those held, and every
 * later one, which UCP keeps sending to the failed lane's index) carry the
 * remote keys of the peer's memory domain of that lane and the local
 * memory handles of ours. On a lane of another memory domain both are
 * translated:
 *   remote key  UCP unpacks a remote key for every memory domain the peer
 *               packed it for, so the key for the other lane is in the same
 *               ucp_rkey_t; the registry below finds it from the failed
 *               lane's key. A key the peer did not pack for the other
 *               memory domain cannot be translated: the operation fails.
 *   memory      the buffer is registered on the other memory domain (UCP's
 *               registration cache), held until the operation completes.
 * Limits (short, bcopy, zcopy sizes, iov entries) are the failed lane's,
 * which UCP keeps using: the other lane's must be at least as large
 * (ucp_failover_substitute).
 */

/* The remote keys of endpoints that may move a lane to another memory
 * domain: the unpacked key -> its endpoint. Their own lock: nothing holds
 * it and the list's together. */
KHASH_MAP_INIT_INT64(ucp_failover_rkeys, ucp_ep_h);

static khash_t(ucp_failover_rkeys) ucp_failover_rkeys;
static ucs_spinlock_t ucp_failover_rkeys_lock;

UCS_STATIC_INIT {
    ucs_spinlock_init(&ucp_failover_rkeys_lock, 0);
    kh_init_inplace(ucp_failover_rkeys, &ucp_failover_rkeys);
}

UCS_STATIC_CLEANUP {
    kh_destroy_inplace(ucp_failover_rkeys, &ucp_failover_rkeys);
    ucs_spinlock_destroy(&ucp_failover_rkeys_lock);
}

/* The endpoint has lanes of a transport that can purge on two memory
 * domains: a lane may move from one to the other */
static int ucp_failover_ep_may_change_md(ucp_ep_h ep)
{
    ucp_md_index_t first = UCP_NULL_RESOURCE;
    ucp_lane_index_t lane;
    ucp_md_index_t md_index;

    for (lane = 0; lane < ucp_ep_num_lanes(ep); ++lane) {
        if (!ucp_failover_lane_can_purge(ep, lane)) {
            continue;
        }
        md_index = ucp_ep_md_index(ep, lane);
        if (first == UCP_NULL_RESOURCE) {
            first = md_index;
        } else if (md_index != first) {
            return 1;
        }
    }
    return 0;
}

void ucp_failover_rkey_unpacked(ucp_ep_h ep, ucp_rkey_h rkey)
{
    khiter_t iter;
    int ret;

    if ((ucs_popcount(rkey->md_map) < 2) ||
        !ucp_failover_ep_may_change_md(ep)) {
        return;
    }

    ucs_spin_lock(&ucp_failover_rkeys_lock);
    iter = kh_put(ucp_failover_rkeys, &ucp_failover_rkeys, (uintptr_t)rkey,
                  &ret);
    if (ret >= 0) {
        kh_value(&ucp_failover_rkeys, iter) = ep;
        rkey->flags                        |= UCP_RKEY_DESC_FLAG_FAILOVER;
    }
    ucs_spin_unlock(&ucp_failover_rkeys_lock);
}

void ucp_failover_rkey_destroyed(ucp_rkey_h rkey)
{
    khiter_t iter;

    ucs_spin_lock(&ucp_failover_rkeys_lock);
    iter = kh_get(ucp_failover_rkeys, &ucp_failover_rkeys, (uintptr_t)rkey);
    if (iter != kh_end(&ucp_failover_rkeys)) {
        kh_del(ucp_failover_rkeys, &ucp_failover_rkeys, iter);
    }
    ucs_spin_unlock(&ucp_failover_rkeys_lock);
}

/* The key of remote key rkey for the peer's memory domain md; 0 if none */
static int ucp_failover_rkey_of(ucp_rkey_h rkey, ucp_md_index_t md,
                                uct_rkey_t *value_p)
{
    if (!(rkey->md_map & UCS_BIT(md))) {
        return 0;
    }
    *value_p = rkey->tl_rkey[ucs_bitmap2idx(rkey->md_map, md)].rkey.rkey;
    return 1;
}

/* Called with ucp_failover_rkeys_lock held: the entry at iter is a key of
 * fo's endpoint whose key for the failed lane is from */
static int ucp_failover_rkey_matches(ucp_failover_t *fo, khiter_t iter,
                                     uct_rkey_t from)
{
    ucp_rkey_h rkey = (ucp_rkey_h)(uintptr_t)kh_key(&ucp_failover_rkeys,
                                                    iter);
    uct_rkey_t value;

    return (kh_value(&ucp_failover_rkeys, iter) == fo->ep) &&
           ucp_failover_rkey_of(rkey, fo->dst_md_from, &value) &&
           (value == from);
}

/* The peer's key for the other lane's memory domain, of the memory the
 * failed lane's key `from` opens */
static ucs_status_t ucp_failover_xlate_rkey(ucp_failover_t *fo,
                                            uct_rkey_t from, uct_rkey_t *to_p)
{
    ucs_status_t status = UCS_ERR_NO_ELEM;
    ucp_rkey_h rkey;
    khiter_t iter;

    ucs_spin_lock(&ucp_failover_rkeys_lock);
    /* the same key as last time, mostly, if that is still registered */
    if ((fo->last_rkey.rkey != NULL) && (fo->last_rkey.from == from)) {
        iter = kh_get(ucp_failover_rkeys, &ucp_failover_rkeys,
                      (uintptr_t)fo->last_rkey.rkey);
        if ((iter != kh_end(&ucp_failover_rkeys)) &&
            ucp_failover_rkey_matches(fo, iter, from)) {
            *to_p  = fo->last_rkey.to;
            status = UCS_OK;
            goto out;
        }
    }

    for (iter = kh_begin(&ucp_failover_rkeys);
         iter != kh_end(&ucp_failover_rkeys); ++iter) {
        if (!kh_exist(&ucp_failover_rkeys, iter) ||
            !ucp_failover_rkey_matches(fo, iter, from)) {
            continue;
        }
        rkey = (ucp_rkey_h)(uintptr_t)kh_key(&ucp_failover_rkeys, iter);
        if (!ucp_failover_rkey_of(rkey, fo->dst_md_to, to_p)) {
            /* this memory was not packed for the other memory domain */
            continue;
        }
        fo->last_rkey.rkey = rkey;
        fo->last_rkey.from = from;
        fo->last_rkey.to   = *to_p;
        status = UCS_OK;
        break;
    }

out:
    ucs_spin_unlock(&ucp_failover_rkeys_lock);
    if (status == UCS_OK) {
        ++fo->keys_translated;
    } else {
        ucs_error("ep %p: lane %u moved to another memory domain, but the "
                  "remote key 0x%" PRIx64 " has no key for it: the operation "
                  "fails", fo->ep, fo->lane, (uint64_t)from);
    }
    return status;
}

/* A zero-copy operation's buffers, registered on the other memory domain
 * until it completes; then the original completion */
typedef struct {
    uct_completion_t        super;
    uct_completion_t        *orig;
    ucp_context_h           context;
    size_t                  num_memh;
    ucp_mem_h               *memh;
    uct_iov_t               iov[];
} ucp_failover_zcopy_t;

static void ucp_failover_zcopy_release(ucp_failover_zcopy_t *zc)
{
    size_t i;

    for (i = 0; i < zc->num_memh; ++i) {
        ucp_memh_put(zc->context, zc->memh[i], 0);
    }
    ucs_free(zc);
}

static void ucp_failover_zcopy_completed(uct_completion_t *self)
{
    ucp_failover_zcopy_t *zc = ucs_derived_of(self, ucp_failover_zcopy_t);
    uct_completion_t *orig   = zc->orig;
    ucs_status_t status      = self->status;

    ucp_failover_zcopy_release(zc);
    if (orig != NULL) {
        ucp_invoke_uct_completion(orig, status);
    }
}

static ucs_status_t
ucp_failover_zcopy_start(ucp_failover_t *fo, const uct_iov_t *iov,
                         size_t iovcnt, uct_completion_t *comp,
                         ucp_failover_zcopy_t **zc_p)
{
    ucp_context_h context = fo->ep->worker->context;
    ucp_failover_zcopy_t *zc;
    ucs_status_t status;
    ucp_mem_h memh;
    size_t i, span;

    zc = ucs_malloc(sizeof(*zc) + iovcnt * (sizeof(uct_iov_t) +
                                            sizeof(ucp_mem_h)),
                    "ucp_failover_zcopy");
    if (zc == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    zc->super.func   = ucp_failover_zcopy_completed;
    zc->super.count  = 1;
    zc->super.status = UCS_OK;
    zc->orig         = comp;
    zc->context      = context;
    zc->num_memh     = 0;
    zc->memh         = (ucp_mem_h*)&zc->iov[iovcnt];

    for (i = 0; i < iovcnt; ++i) {
        zc->iov[i] = iov[i];
        if ((iov[i].memh == UCT_MEM_HANDLE_NULL) || (iov[i].length == 0)) {
            continue;
        }
        span   = (ucs_max(iov[i].count, 1) - 1) * iov[i].stride +
                 iov[i].length;
        status = ucp_memh_get(context, iov[i].buffer, span,
                              UCS_MEMORY_TYPE_HOST, UCS_BIT(fo->md_to),
                              UCT_MD_MEM_ACCESS_RMA, &memh);
        if (status != UCS_OK) {
            ucs_error("ep %p: cannot register %p..+%zu on the other lane's "
                      "memory domain: %s", fo->ep, iov[i].buffer, span,
                      ucs_status_string(status));
            zc->orig = NULL;
            ucp_failover_zcopy_release(zc);
            return status;
        }
        zc->memh[zc->num_memh++] = memh;
        zc->iov[i].memh          = memh->uct[fo->md_to];
        ++fo->buffers_registered;
    }

    *zc_p = zc;
    return UCS_OK;
}

/* The operation was posted, or not: unless it is in progress, the caller
 * knows its outcome and the registrations go */
static ucs_status_t ucp_failover_zcopy_posted(ucp_failover_zcopy_t *zc,
                                              ucs_status_t status)
{
    if (status != UCS_INPROGRESS) {
        zc->orig = NULL;
        ucp_failover_zcopy_release(zc);
    }
    return status;
}

static ucp_failover_t *ucp_failover_of_xlate(uct_ep_h xlate_ep)
{
    return ucs_container_of(xlate_ep, ucp_failover_t, xlate_ep);
}

uct_ep_h ucp_failover_sub_ep(ucp_failover_t *fo)
{
    return (fo->sub_new_ep != NULL) ? fo->sub_new_ep :
           fo->ep->uct_eps[fo->sub_lane];
}

/* The operations below: translate, then post on the other lane */

static ucs_status_t ucp_failover_xlate_put_short(uct_ep_h ep,
                                                 const void *buffer,
                                                 unsigned length,
                                                 uint64_t remote_addr,
                                                 uct_rkey_t rkey)
{
    ucp_failover_t *fo = ucp_failover_of_xlate(ep);
    ucs_status_t status;
    uct_rkey_t to;

    status = ucp_failover_xlate_rkey(fo, rkey, &to);
    if (status != UCS_OK) {
        return status;
    }
    return uct_ep_put_short(ucp_failover_sub_ep(fo), buffer, length,
                            remote_addr, to);
}

static ssize_t ucp_failover_xlate_put_bcopy(uct_ep_h ep,
                                            uct_pack_callback_t pack_cb,
                                            void *arg, uint64_t remote_addr,
                                            uct_rkey_t rkey)
{
    ucp_failover_t *fo = ucp_failover_of_xlate(ep);
    ucs_status_t status;
    uct_rkey_t to;

    status = ucp_failover_xlate_rkey(fo, rkey, &to);
    if (status != UCS_OK) {
        return status;
    }
    return uct_ep_put_bcopy(ucp_failover_sub_ep(fo), pack_cb, arg,
                            remote_addr, to);
}

/* A zero-copy put or get: its key and its buffers */
static ucs_status_t
ucp_failover_xlate_rma_zcopy(uct_ep_h ep, uct_ep_put_zcopy_func_t post,
                             const uct_iov_t *iov, size_t iovcnt,
                             uint64_t remote_addr, uct_rkey_t rkey,
                             uct_completion_t *comp)
{
    ucp_failover_t *fo = ucp_failover_of_xlate(ep);
    ucp_failover_zcopy_t *zc;
    ucs_status_t status;
    uct_rkey_t to;

    status = ucp_failover_xlate_rkey(fo, rkey, &to);
    if (status != UCS_OK) {
        return status;
    }
    status = ucp_failover_zcopy_start(fo, iov, iovcnt, comp, &zc);
    if (status != UCS_OK) {
        return status;
    }
    return ucp_failover_zcopy_posted(zc,
            post(ucp_failover_sub_ep(fo), zc->iov, iovcnt, remote_addr, to,
                 &zc->super));
}

static ucs_status_t ucp_failover_xlate_put_zcopy(uct_ep_h ep,
                                                 const uct_iov_t *iov,
                                                 size_t iovcnt,
                                                 uint64_t remote_addr,
                                                 uct_rkey_t rkey,
                                                 uct_completion_t *comp)
{
    return ucp_failover_xlate_rma_zcopy(
            ep, ucp_failover_sub_ep(ucp_failover_of_xlate(ep))->iface->
                    ops.ep_put_zcopy,
            iov, iovcnt, remote_addr, rkey, comp);
}

static ucs_status_t ucp_failover_xlate_get_bcopy(uct_ep_h ep,
                                                 uct_unpack_callback_t
                                                 unpack_cb,
                                                 void *arg, size_t length,
                                                 uint64_t remote_addr,
                                                 uct_rkey_t rkey,
                                                 uct_completion_t *comp)
{
    ucp_failover_t *fo = ucp_failover_of_xlate(ep);
    ucs_status_t status;
    uct_rkey_t to;

    status = ucp_failover_xlate_rkey(fo, rkey, &to);
    if (status != UCS_OK) {
        return status;
    }
    return uct_ep_get_bcopy(ucp_failover_sub_ep(fo), unpack_cb, arg, length,
                            remote_addr, to, comp);
}

static ucs_status_t ucp_failover_xlate_get_zcopy(uct_ep_h ep,
                                                 const uct_iov_t *iov,
                                                 size_t iovcnt,
                                                 uint64_t remote_addr,
                                                 uct_rkey_t rkey,
                                                 uct_completion_t *comp)
{
    return ucp_failover_xlate_rma_zcopy(
            ep, ucp_failover_sub_ep(ucp_failover_of_xlate(ep))->iface->
                    ops.ep_get_zcopy,
            iov, iovcnt, remote_addr, rkey, comp);
}

static ucs_status_t ucp_failover_xlate_am_short(uct_ep_h ep, uint8_t id,
                                                uint64_t header,
                                                const void *payload,
                                                unsigned length)
{
    return uct_ep_am_short(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)),
                           id, header, payload, length);
}

static ucs_status_t ucp_failover_xlate_am_short_iov(uct_ep_h ep, uint8_t id,
                                                    const uct_iov_t *iov,
                                                    size_t iovcnt)
{
    /* short: the data is copied, no memory handle is used */
    return uct_ep_am_short_iov(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)),
                               id, iov, iovcnt);
}

static ssize_t ucp_failover_xlate_am_bcopy(uct_ep_h ep, uint8_t id,
                                           uct_pack_callback_t pack_cb,
                                           void *arg, unsigned flags)
{
    return uct_ep_am_bcopy(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)),
                           id, pack_cb, arg, flags);
}

static ucs_status_t ucp_failover_xlate_am_zcopy(uct_ep_h ep, uint8_t id,
                                                const void *header,
                                                unsigned header_length,
                                                const uct_iov_t *iov,
                                                size_t iovcnt, unsigned flags,
                                                uct_completion_t *comp)
{
    ucp_failover_t *fo = ucp_failover_of_xlate(ep);
    ucp_failover_zcopy_t *zc;
    ucs_status_t status;

    status = ucp_failover_zcopy_start(fo, iov, iovcnt, comp, &zc);
    if (status != UCS_OK) {
        return status;
    }
    return ucp_failover_zcopy_posted(zc,
            uct_ep_am_zcopy(ucp_failover_sub_ep(fo), id, header,
                            header_length, zc->iov, iovcnt, flags,
                            &zc->super));
}

/* The atomics of one operand size: their key */
#define UCP_FAILOVER_XLATE_ATOMICS(_bits) \
    static ucs_status_t ucp_failover_xlate_atomic_cswap##_bits( \
            uct_ep_h ep, uint##_bits##_t compare, uint##_bits##_t swap, \
            uint64_t remote_addr, uct_rkey_t rkey, uint##_bits##_t *result, \
            uct_completion_t *comp) \
    { \
        ucp_failover_t *fo = ucp_failover_of_xlate(ep); \
        ucs_status_t status; \
        uct_rkey_t to; \
        \
        status = ucp_failover_xlate_rkey(fo, rkey, &to); \
        if (status != UCS_OK) { \
            return status; \
        } \
        return uct_ep_atomic_cswap##_bits(ucp_failover_sub_ep(fo), compare, \
                                          swap, remote_addr, to, result, \
                                          comp); \
    } \
    \
    static ucs_status_t ucp_failover_xlate_atomic##_bits##_post( \
            uct_ep_h ep, uct_atomic_op_t opcode, uint##_bits##_t value, \
            uint64_t remote_addr, uct_rkey_t rkey) \
    { \
        ucp_failover_t *fo = ucp_failover_of_xlate(ep); \
        ucs_status_t status; \
        uct_rkey_t to; \
        \
        status = ucp_failover_xlate_rkey(fo, rkey, &to); \
        if (status != UCS_OK) { \
            return status; \
        } \
        return uct_ep_atomic##_bits##_post(ucp_failover_sub_ep(fo), opcode, \
                                           value, remote_addr, to); \
    } \
    \
    static ucs_status_t ucp_failover_xlate_atomic##_bits##_fetch( \
            uct_ep_h ep, uct_atomic_op_t opcode, uint##_bits##_t value, \
            uint##_bits##_t *result, uint64_t remote_addr, uct_rkey_t rkey, \
            uct_completion_t *comp) \
    { \
        ucp_failover_t *fo = ucp_failover_of_xlate(ep); \
        ucs_status_t status; \
        uct_rkey_t to; \
        \
        status = ucp_failover_xlate_rkey(fo, rkey, &to); \
        if (status != UCS_OK) { \
            return status; \
        } \
        return uct_ep_atomic##_bits##_fetch(ucp_failover_sub_ep(fo), opcode, \
                                            value, result, remote_addr, to, \
                                            comp); \
    }

UCP_FAILOVER_XLATE_ATOMICS(32)
UCP_FAILOVER_XLATE_ATOMICS(64)

static ucs_status_t ucp_failover_xlate_pending_add(uct_ep_h ep,
                                                   uct_pending_req_t *req,
                                                   unsigned flags)
{
    return uct_ep_pending_add(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)),
                              req, flags);
}

static void ucp_failover_xlate_pending_purge(uct_ep_h ep,
                                             uct_pending_purge_callback_t cb,
                                             void *arg)
{
    uct_ep_pending_purge(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)), cb,
                         arg);
}

static ucs_status_t ucp_failover_xlate_flush(uct_ep_h ep, unsigned flags,
                                             uct_completion_t *comp)
{
    return uct_ep_flush(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)), flags,
                        comp);
}

static ucs_status_t ucp_failover_xlate_fence(uct_ep_h ep, unsigned flags)
{
    return uct_ep_fence(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)), flags);
}

static ucs_status_t ucp_failover_xlate_check(uct_ep_h ep, unsigned flags,
                                             uct_completion_t *comp)
{
    return uct_ep_check(ucp_failover_sub_ep(ucp_failover_of_xlate(ep)), flags,
                        comp);
}

/* The proxy does not own the translating endpoint: the failover ends with
 * the lane (ucp_failover_ep_cleanup) */
const uct_iface_ops_t ucp_failover_xlate_ops = {
    .ep_put_short        = ucp_failover_xlate_put_short,
    .ep_put_bcopy        = ucp_failover_xlate_put_bcopy,
    .ep_put_zcopy        = ucp_failover_xlate_put_zcopy,
    .ep_get_short        = (uct_ep_get_short_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_get_bcopy        = ucp_failover_xlate_get_bcopy,
    .ep_get_zcopy        = ucp_failover_xlate_get_zcopy,
    .ep_am_short         = ucp_failover_xlate_am_short,
    .ep_am_short_iov     = ucp_failover_xlate_am_short_iov,
    .ep_am_bcopy         = ucp_failover_xlate_am_bcopy,
    .ep_am_zcopy         = ucp_failover_xlate_am_zcopy,
    .ep_atomic_cswap64   = ucp_failover_xlate_atomic_cswap64,
    .ep_atomic_cswap32   = ucp_failover_xlate_atomic_cswap32,
    .ep_atomic64_post    = ucp_failover_xlate_atomic64_post,
    .ep_atomic32_post    = ucp_failover_xlate_atomic32_post,
    .ep_atomic64_fetch   = ucp_failover_xlate_atomic64_fetch,
    .ep_atomic32_fetch   = ucp_failover_xlate_atomic32_fetch,
    .ep_tag_eager_short  = (uct_ep_tag_eager_short_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_tag_eager_bcopy  = (uct_ep_tag_eager_bcopy_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_tag_eager_zcopy  = (uct_ep_tag_eager_zcopy_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_tag_rndv_zcopy   = (uct_ep_tag_rndv_zcopy_func_t)
                           ucs_empty_function_return_ptr_no_resource,
    .ep_tag_rndv_cancel  = (uct_ep_tag_rndv_cancel_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_tag_rndv_request = (uct_ep_tag_rndv_request_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_pending_add      = ucp_failover_xlate_pending_add,
    .ep_pending_purge    = ucp_failover_xlate_pending_purge,
    .ep_flush            = ucp_failover_xlate_flush,
    .ep_fence            = ucp_failover_xlate_fence,
    .ep_check            = ucp_failover_xlate_check,
    .ep_get_address      = (uct_ep_get_address_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_connect_to_ep    = (uct_ep_connect_to_ep_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_destroy          = (uct_ep_destroy_func_t)ucs_empty_function
};

/* Where the lane's operations go once the replay starts */
uct_ep_h ucp_failover_target_ep(ucp_failover_t *fo)
{
    return fo->other_md ? &fo->xlate_ep : ucp_failover_sub_ep(fo);
}
