/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 * See file LICENSE for terms.
 *
 * Memory keys and access checks. A key is (table index << 8 | 8-bit
 * generation), so a stale key of a deregistered region misses even after
 * its slot is reused. lkey and rkey are the same value.
 *
 * Registered memory the application has unmapped. A real HCA works on the
 * pages that ibv_reg_mr pinned, not on the process's mappings: when the
 * application frees a buffer whose registration is still alive (UCX's
 * registration cache keeps them until it processes the unmap event), a
 * WRITE that arrives late lands in pages nobody sees any more, and nothing
 * fails. The device accesses memory through the process's addresses, so
 * such an access faults. Every access to registered memory by the engine
 * therefore goes through sib_mem_copy() or sib_mem_atomic(), which catch
 * the fault and behave like the pinned pages: writes go nowhere, reads
 * return zeros, and the access is counted (unmapped_mr_access).
 */
#include "sib_loc.h"
#include "sib_log.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>


/* Where the thread accessing registered memory resumes after a fault, or
 * NULL when it is not accessing any. volatile: the compiler sees no reader
 * of it between setting and clearing (the handler is invisible to it) and
 * would drop the store otherwise. */
static __thread sigjmp_buf *volatile sib_mem_fault_env;
static struct sigaction sib_mem_old_segv;
static struct sigaction sib_mem_old_bus;

/* A fault in any other code belongs to the program: hand it to the handler
 * that was there before ours, or to the default action, which the faulting
 * instruction then triggers again when this handler returns. */
static void sib_mem_fault(int sig, siginfo_t *info, void *uctx)
{
    sigjmp_buf *env = sib_mem_fault_env;
    const struct sigaction *old;

    if (env != NULL) {
        sib_mem_fault_env = NULL;
        siglongjmp(*env, 1);
    }

    old = (sig == SIGBUS) ? &sib_mem_old_bus : &sib_mem_old_segv;
    if (old->sa_flags & SA_SIGINFO) {
        old->sa_sigaction(sig, info, uctx);
    } else if ((old->sa_handler != SIG_DFL) && (old->sa_handler != SIG_IGN)) {
        old->sa_handler(sig);
    } else {
        signal(sig, SIG_DFL);
    }
}

static void sib_mem_guard_install(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = sib_mem_fault;
    /* NODEFER: a thread that leaves the handler by siglongjmp must not
     * keep the signal blocked (sigsetjmp does not save the mask, which
     * would cost a system call per access) */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if ((sigaction(SIGSEGV, &sa, &sib_mem_old_segv) < 0) ||
        (sigaction(SIGBUS, &sa, &sib_mem_old_bus) < 0)) {
        sib_log_warn("cannot catch faults on unmapped registered memory: %m");
    }
}

/* Called when the engine is created: before any access to registered
 * memory, and usually after the program's own fault handlers (UCX sets
 * them when it loads), so that ours sees the faults first. */
void sib_mem_guard_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, sib_mem_guard_install);
}

static void sib_mem_unmapped(struct sib_context *ctx, const void *addr)
{
    sib_count(ctx, SIB_CNT_UNMAPPED_MR, 1);
    sib_log_debug("registered memory at %p is no longer mapped", addr);
}

/* Engine lock held. Copy to or from registered memory (addr is the side
 * that is registered). Returns 0, or -EFAULT if that memory was unmapped:
 * then a read leaves zeros in dst, a write is lost, as with pinned pages. */
int sib_mem_copy(struct sib_context *ctx, void *dst, const void *src,
                 size_t len, const void *addr)
{
    sigjmp_buf env;

    if (sigsetjmp(env, 0) != 0) {
        if (addr == src) {
            memset(dst, 0, len);
        }
        sib_mem_unmapped(ctx, addr);
        return -EFAULT;
    }
    sib_mem_fault_env = &env;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memcpy(dst, src, len);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    sib_mem_fault_env = NULL;
    return 0;
}

/* Engine lock held. Fetch-and-add, or compare-and-swap when cswap is set,
 * on a registered 64-bit word; returns the value before. On unmapped
 * memory nothing is changed and the value read is 0. */
uint64_t sib_mem_atomic(struct sib_context *ctx, uint64_t *target, int cswap,
                        uint64_t compare, uint64_t swap_add)
{
    sigjmp_buf env;
    uint64_t orig;

    if (sigsetjmp(env, 0) != 0) {
        sib_mem_unmapped(ctx, target);
        return 0;
    }
    sib_mem_fault_env = &env;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (cswap) {
        orig = compare;
        /* on failure orig receives the current value; on success it
         * already holds it */
        __atomic_compare_exchange_n(target, &orig, swap_add, 0,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    } else {
        orig = __atomic_fetch_add(target, swap_add, __ATOMIC_SEQ_CST);
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    sib_mem_fault_env = NULL;
    return orig;
}


/* Engine lock held. */
struct sib_mr *sib_mr_lookup(struct sib_context *ctx, uint32_t key)
{
    uint32_t index = key >> 8;
    struct sib_mr *mr;

    if (index >= ctx->mr_table_size) {
        return NULL;
    }
    mr = ctx->mr_table[index];
    return ((mr != NULL) && (mr->ibmr.lkey == key)) ? mr : NULL;
}

/* 0 if [iova, iova + len) lies in the region, the PDs match and the region
 * grants every access bit asked for (IBA 10.6.3.1). */
int sib_mr_check(struct sib_mr *mr, struct sib_pd *pd, uint64_t iova,
                 uint64_t len, unsigned access)
{
    if ((mr->pd != pd) || ((mr->access & access) != access) ||
        (iova < mr->iova) || (len > mr->length) ||
        (iova - mr->iova > mr->length - len)) {
        return -1;
    }
    return 0;
}

/* Engine lock held. Scatter len bytes of src into the SGE list, starting
 * offset bytes in. Every SGE touched is checked for local write access.
 * Returns 0, or -1 on a protection error (nothing after it is written). */
int sib_sge_copy_to(struct sib_context *ctx, struct sib_pd *pd,
                    const struct ibv_sge *sge, uint32_t num_sge,
                    uint32_t offset, const void *src, uint32_t len)
{
    const uint8_t *from = src;
    struct sib_mr *mr;
    uint32_t i, piece;
    uint8_t *dst;

    for (i = 0; (i < num_sge) && (len > 0); i++) {
        if (offset >= sge[i].length) {
            offset -= sge[i].length;
            continue;
        }
        piece = sge[i].length - offset;
        if (piece > len) {
            piece = len;
        }
        mr = sib_mr_lookup(ctx, sge[i].lkey);
        if ((mr == NULL) ||
            sib_mr_check(mr, pd, sge[i].addr + offset, piece,
                         IBV_ACCESS_LOCAL_WRITE)) {
            return -1;
        }
        dst = mr->addr + (sge[i].addr + offset - mr->iova);
        sib_mem_copy(ctx, dst, from, piece, dst);
        from  += piece;
        len   -= piece;
        offset = 0;
    }
    return (len == 0) ? 0 : -1;
}
